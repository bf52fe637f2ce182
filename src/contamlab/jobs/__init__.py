"""Jobs: train, evaluate, detect; the only code that reads the Hydra config.

:mod:`.common` turns the config into a :class:`~contamlab.models.store.ModelStore` and a
:class:`~contamlab.decoding.pipeline.SamplingSetup`. Called by ``train.py`` / ``evaluate.py`` through
:func:`contamlab.config.run_safely`; imports every layer below.
"""
