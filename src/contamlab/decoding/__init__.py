"""Decoding: samplers (HF, vLLM; the :class:`~.sampler.Sampler` protocol), the sample pipeline, the strategies.

One module per strategy: :mod:`.strategy` (protocol, Identity, All-Zero), :mod:`.railcap`, :mod:`.lne`, :mod:`.ted`,
:mod:`.shortcut`. Imports ``data``, ``models``, ``metrics``, ``io``, ``errors``; never ``training`` or the jobs.
"""
