"""Jobs: the entry points of ``train.py``, ``evaluate.py`` and ``audit.py``, one ``run(cfg)`` each.

A job composes the services (:mod:`contamlab.stages`, :mod:`contamlab.scoring`, :mod:`contamlab.detection`, the
:mod:`contamlab.audit` package) and writes what they return; no job imports another. Called through
:func:`contamlab.config.run_safely`, which validates the config first.
"""
