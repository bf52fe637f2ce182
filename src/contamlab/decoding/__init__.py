"""Decoding: the samplers (HF, vLLM; the :class:`~.sampler.Sampler` protocol), the sample pipeline and cache, and
the strategies, one module each (:mod:`.strategy` for the protocol, Identity and All-Zero; :mod:`.railcap`, :mod:`.lne`,
:mod:`.ted`, :mod:`.shortcut`). Imports ``data``, ``models``, ``metrics``, ``io``, ``errors``; never ``training``.
"""
