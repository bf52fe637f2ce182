"""Analysis: the report's tables (paper Tables 1–4, the detector table), Figures 1–2, claims, transparency card.

Reads results files and numbers; imports ``metrics``, ``data``, ``models``, ``io``, ``errors`` (and the layers of
``decoding``, ``detectors``, ``training`` below it), never the jobs or the Hydra config.
"""
