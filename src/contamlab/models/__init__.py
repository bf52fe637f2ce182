"""Models: loading (hub id, local directory, peft adapter, the SmolLM2 package, the tiny world's model), the store.

A ``model=`` config builds a :class:`~contamlab.models.spec.ModelSpec` (one class per kind); the model store
(:mod:`~contamlab.models.store`) says where trained models live and what identifies a model;
:func:`~contamlab.models.loading.read_adapter` is the one parser of peft adapter records.

Imports only ``data``, ``io`` and ``errors``.
"""

from contamlab.models.loading import load_causal_lm, load_tokenizer
from contamlab.models.spec import HubModel, ModelSpec, SmolLM2Model, TinyModel
from contamlab.models.store import ModelStore, model_identity

__all__ = [
    "HubModel",
    "ModelSpec",
    "ModelStore",
    "SmolLM2Model",
    "TinyModel",
    "load_causal_lm",
    "load_tokenizer",
    "model_identity",
]
