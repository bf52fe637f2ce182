"""Training: a Lightning library for causal-LM fine-tuning.

LightningModule, DataModule, training mixes, progress and resumable-checkpoint helpers. The stage runner is
:mod:`contamlab.stages`; where stages live is :mod:`contamlab.models.store`. Imports ``data``, ``models``, ``io``,
``errors``.
"""
