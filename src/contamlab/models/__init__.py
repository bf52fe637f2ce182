"""Models: loading (hub id, local directory, peft adapter, the SmolLM2 package, the tiny world's model), the store.

A ``model=`` config builds a :class:`~contamlab.models.spec.ModelSpec` (one class per kind); the model store
(:mod:`~contamlab.models.store`) says where trained models live and what identifies a model;
:func:`~contamlab.models.loading.read_adapter` is the one parser of peft adapter records.

Imports only ``data``, ``io`` and ``errors``.
"""

from typing import TYPE_CHECKING

from contamlab.models.spec import HubModel, ModelSpec, SmolLM2Model, TinyModel
from contamlab.models.store import ModelStore, model_identity

if TYPE_CHECKING:
    from contamlab.models.loading import load_causal_lm, load_tokenizer


def __getattr__(name: str):
    # The loaders import transformers (3-4 s of CPU): only on use, so that a config's validation, which imports the
    # spec and store of every group, reports a bad value before transformers loads.
    if name in ("load_causal_lm", "load_tokenizer"):
        from contamlab.models import loading

        return getattr(loading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
