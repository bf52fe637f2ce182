"""contamlab: simulate, mitigate, measure and detect benchmark contamination in LLMs.

Layers, low to high (each imports only its own layer or below; ``tests/test_layers.py`` keeps it so):
``metrics`` ``io`` ``errors`` → ``data`` ``models`` → ``decoding`` ``detectors`` ``training`` → ``analysis`` →
``jobs`` (with ``config``, ``validation``) → the entry points ``train.py``, ``evaluate.py``.
"""

__version__ = "0.1.0"
