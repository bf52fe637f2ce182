"""Up-front checks of a composed train / evaluate config: a bad value stops the job before any data or model loads.

Hydra catches unknown groups, options and keys; it cannot know that ``temperature`` must be a positive number or
that ``+sampler.temperature=5`` is not a setting of the sampler. :func:`validate` checks every top-level field, the
fields of the groups without a ``_target_`` (``finetune``, ``base``, ``trainer``, ``metric``) and a few of ``model``
by rule, and the keys and scalar types of each buildable group (``model``, ``strategy``, ``detector``, ``sampler``,
``domain``, ``logger``) against its target's signature. Range checks that need a built object (``strategy.n >= 1``)
stay in the constructors, which also run before any model loads. A value is checked in one place: a value with a rule
here is not checked again by the object it configures.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from contamlab.errors import ContamlabError
from contamlab.io import looks_like_path
from contamlab.models.reference import ModelRef
from contamlab.models.store import SHAM, STAGES

Check = Callable[[Any], bool]
# Hydra's own keys in a buildable node, never parameters of the target.
_HYDRA_KEYS = {"_target_", "_partial_", "_convert_", "_recursive_", "_args_"}
# Parameters the entry points pass to a sampler factory themselves (decoding/sampler.py, decoding/vllm_sampler.py).
_CALL_ARGS = {"sampler": {"model", "tokenizer", "stop", "max_new_tokens"}}
# Keys of a group that the job reads itself and removes before building the target (config.sampling_setup); a new one
# must be listed here, with a rule below.
_JOB_KEYS = {"sampler": {"common_noise"}}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def integer(low: int | None = None) -> tuple[Check, str]:
    """An integer, at least ``low`` when given."""
    text = "an integer" if low is None else f"an integer >= {low}"
    return (lambda v: _is_int(v) and (low is None or v >= low)), text


def number(low: float | None = None, high: float | None = None, low_open: bool = False) -> tuple[Check, str]:
    """A number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def check(v: Any) -> bool:
        if not _is_number(v):
            return False
        if low is not None and (v <= low if low_open else v < low):
            return False
        return high is None or v <= high

    if low is not None and high is not None:
        text = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"
    elif low is not None:
        text = f"a number {'>' if low_open else '>='} {low:g}"
    else:
        text = "a number"
    return check, text


def boolean() -> tuple[Check, str]:
    """``true`` or ``false``."""
    return (lambda v: isinstance(v, bool)), "true or false"


def choice(*options: Any) -> tuple[Check, str]:
    """One of ``options``."""
    names = [str(o) for o in options]
    text = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    text = f"one of {text}" if len(names) > 2 else text
    return (lambda v: v in options), text


def optional(rule: tuple[Check, str]) -> tuple[Check, str]:
    """``rule``, or null."""
    check, text = rule
    return (lambda v: v is None or check(v)), f"{text}, or null"


def pair(rule: tuple[Check, str]) -> tuple[Check, str]:
    """A list of two values that each satisfy ``rule``."""
    check, text = rule
    return (
        lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and all(check(x) for x in v)
    ), f"a list of two, each {text}"


COMMON: dict[str, tuple[Check, str]] = {
    "seed": integer(0),
    "threads": optional(integer(1)),
    "base.steps": integer(1),
    "base.batch": integer(1),
    "base.seq_len": integer(2),
    "base.lr": number(0, low_open=True),
    "base.warmup_steps": integer(0),
    "base.min_lr_ratio": number(0, 1),
    "base.weight_decay": number(0),
    "base.betas": pair(number(0, 1)),
    "base.grad_clip": number(0),
    "base.paraphrase_n": integer(0),
    "base.num_threads": (
        lambda v: v is None or v == "auto" or (_is_int(v) and v >= 1),
        "an integer >= 1, auto or null",
    ),
    "model.dtype": choice("auto", "float32", "bfloat16", "float16"),
    "model.device_map": optional(choice("auto", "balanced", "balanced_low_0", "sequential")),
    "model.trust_remote_code": boolean(),
    "model.batch_rows": optional(integer(1)),
    # both halves are needed (the detectors' AUROC, the leaked/unleaked metrics)
    "domain.leak_fraction": (lambda v: _is_number(v) and 0 < v < 1, "a number strictly between 0 and 1"),
    "domain.leak_lr": optional(number(0, low_open=True)),
    "sham": boolean(),
}
EVALUATE: dict[str, tuple[Check, str]] = {
    "m": integer(1),
    "temperature": number(0, low_open=True),
    "max_new_tokens": integer(1),
    "chunk_questions": integer(1),
    "progress": boolean(),
    "analysis.figures": boolean(),
    "analysis.figure1": boolean(),
    "analysis.figure1_steps": integer(1),
    "analysis.stability": boolean(),
    "analysis.floor": boolean(),
    "metric.bins": integer(1),
    "metric.bootstrap": integer(0),
    "metric.confidence": number(0, 1, low_open=True),
    "model.draw": choice("multinomial", "inverse_cdf"),
    "sampler.common_noise": boolean(),
}
_STRINGS = (lambda v: isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v), "a list of names")


def _dose(d: Any) -> bool:
    """One twin dose of the error-rate audit: ``{epochs: int >= 1 | null, lr: > 0 | null, fraction: (0, 1] | null}``."""
    if not isinstance(d, dict) or not set(d) <= {"epochs", "lr", "fraction"}:
        return False
    epochs, lr, fraction = d.get("epochs"), d.get("lr"), d.get("fraction")
    return (
        (epochs is None or (_is_int(epochs) and epochs >= 1))
        and (lr is None or (_is_number(lr) and lr > 0))
        and (fraction is None or (_is_number(fraction) and 0 < fraction <= 1))
    )


AUDIT: dict[str, tuple[Check, str]] = {
    **{k: EVALUATE[k] for k in ("m", "temperature", "max_new_tokens", "chunk_questions", "progress")},
    # audit.target and audit.references: ModelRef.parse and check_exists (:func:`_check_audit_models`)
    "audit.detectors": _STRINGS,
    "audit.mitigate": _STRINGS,
    # audit.nonmembers and audit.error_rates.pool: a keyword or an existing file (:func:`_check_audit_items`)
    "audit.blind": boolean(),
    "audit.alpha": number(0, 1, low_open=True),
    "audit.n_boot": integer(1),
    "audit.confidence": number(0, 1, low_open=True),
    "audit.shift_null.condition": choice("auto", "none", "style", "source"),
    "audit.shift_null.max_rate": number(0, 1),
    "audit.error_rates.pool_size": optional(integer(20)),
    "audit.error_rates.null_draws": integer(1),
    "audit.error_rates.twins": integer(1),
    "audit.error_rates.twin_pools": choice("own", "shared"),
    "audit.error_rates.min_power": number(0, 1, low_open=True),
    "audit.error_rates.doses": (
        lambda v: isinstance(v, list) and bool(v) and all(_dose(d) for d in v),
        "a non-empty list of {epochs: an integer >= 1 or null, lr: a number > 0 or null, fraction: in (0, 1] or null}",
    ),
}
SAMPLERS: dict[str, dict[str, tuple[Check, str]]] = {
    "hf": {
        "sampler.batch_rows": integer(1),
        "sampler.compact_fraction": number(0, 1, low_open=True),
        "sampler.draw": choice("multinomial", "inverse_cdf"),
    },
    "vllm": {
        "sampler.tensor_parallel_size": integer(1),
        "sampler.gpu_memory_utilization": number(0, 1, low_open=True),
        "sampler.max_model_len": optional(integer(1)),
        "sampler.max_num_seqs": integer(1),
        "sampler.max_lora_rank": integer(1),
        "sampler.enforce_eager": boolean(),
    },
}
TRAIN: dict[str, tuple[Check, str]] = {
    "stage": choice(*STAGES, SHAM, "all"),
    "snapshots": (
        lambda v: isinstance(v, list) and all(_is_int(e) and e >= 1 for e in v),
        "a list of epochs, each an integer >= 1",
    ),
    "finetune.peft": choice("lora", "none"),
    "finetune.lora.r": integer(1),
    "finetune.lora.alpha": number(0, low_open=True),
    "finetune.lora.dropout": number(0, 1),
    "finetune.lr": number(0, low_open=True),
    "finetune.scheduler": choice("cosine", "linear", "constant"),
    "finetune.warmup": number(0, 1),
    "finetune.weight_decay": number(0),
    "finetune.micro_batch": integer(1),
    "finetune.global_batch": integer(1),
    "finetune.epochs": integer(1),
    "finetune.max_length": integer(2),
    "finetune.group_by_length": boolean(),
    "finetune.loss_on": choice("response", "all"),
    "finetune.logits": choice("all", "labelled"),
    "finetune.general.source": choice("openorca", "domain_train", "none"),
    "finetune.general.n": integer(0),
    "finetune.clean_n_domain": integer(0),
    "trainer.num_threads": optional(integer(1)),
    "trainer.log_every_n_steps": integer(1),
    "trainer.progress_every_n_steps": optional(integer(1)),
    "trainer.enable_progress_bar": boolean(),
}


def _show(value: Any) -> str:
    """A value as a user would type it after ``key=`` (strings quoted, so ``'abc'`` reads as the culprit)."""
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)


def _get(cfg: DictConfig, key: str) -> tuple[bool, Any]:
    """``(present, value)`` of a dotted key; a value whose interpolation fails is reported as a config error."""
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node:
            return False, None
        try:
            node = node[part]
        except Exception as err:  # an interpolation that does not resolve (${oc.env:...}, a missing key)
            raise ContamlabError(f"{key}: cannot resolve its value ({str(err).splitlines()[0]})") from None
    if isinstance(node, (DictConfig, ListConfig)):
        node = OmegaConf.to_container(node, resolve=True)
    return True, node


def _check_rules(cfg: DictConfig, rules: dict[str, tuple[Check, str]]) -> None:
    for key, (check, text) in rules.items():
        present, value = _get(cfg, key)
        if present and not check(value):
            raise ContamlabError(f"{key}={_show(value)}: must be {text}")


def _parameters(target: Any) -> tuple[dict[str, str], bool] | None:
    """Named parameters of a callable and their annotations as text; None when the signature cannot be read.

    A class contributes its ``__init__`` and, while each passes ``**kwargs`` on, its bases' ``__init__``.

    Returns:
        ``({name: annotation}, open)``; ``open`` is True when a ``**kwargs`` nobody consumes accepts anything.
    """
    callables = (
        [c.__init__ for c in inspect.getmro(target) if "__init__" in vars(c)] if inspect.isclass(target) else [target]
    )
    params: dict[str, str] = {}
    for fn in callables:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        var_kw = False
        for name, param in signature.parameters.items():
            if name == "self" or param.kind is param.VAR_POSITIONAL:
                continue
            if param.kind is param.VAR_KEYWORD:
                var_kw = True
                continue
            ann = param.annotation
            params.setdefault(name, ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)))
        if not var_kw:
            return params, False
        if fn is object.__init__:
            break
    return params, True


def _scalar_check(annotation: str) -> tuple[Check, str] | None:
    """A check for a plain scalar annotation (``int``, ``float | None`` …); None for anything richer."""
    if annotation.startswith("Optional[") and annotation.endswith("]"):
        annotation = annotation[len("Optional[") : -1] + " | None"
    parts = [p.strip() for p in annotation.split("|")]
    allows_none = "None" in parts
    kinds = [p for p in parts if p != "None"]
    if len(kinds) != 1 or kinds[0] not in ("int", "float", "bool", "str"):
        return None
    rule = {"int": integer(), "float": number(), "bool": boolean(), "str": (lambda v: isinstance(v, str), "a string")}[
        kinds[0]
    ]
    return optional(rule) if allows_none else rule


def _check_group(cfg: DictConfig, group: str) -> None:
    """Keys and scalar types of a buildable group against its ``_target_``'s signature."""
    node = OmegaConf.select(cfg, group)  # a group (``strategy``) or a packaged one (``detectors.codec``)
    if not isinstance(node, DictConfig) or not node.get("_target_"):
        return
    from hydra.utils import get_object

    try:
        target = get_object(str(node._target_))
    except Exception:
        return  # building it reports the unknown target with the group's name (config.build)
    found = _parameters(target)
    if found is None:
        return
    params, open_kwargs = found
    for name in _CALL_ARGS.get(group, set()):
        params.pop(name, None)
    for key in node:
        key = str(key)
        if key in _HYDRA_KEYS or key in _JOB_KEYS.get(group, set()):
            continue
        if key not in params:
            if open_kwargs:
                continue
            hint = f"; the top-level `{key}=` sets it" if key in cfg else ""
            known = ", ".join(sorted(params)) or "none"
            raise ContamlabError(
                f"{group}.{key}: not a setting of {group}={node.get('name', '?')} ({node._target_}); its settings: "
                f"{known}{hint}"
            )
        rule = _scalar_check(params[key])
        if rule is None:
            continue
        present, value = _get(cfg, f"{group}.{key}")
        if present and not rule[0](value):
            raise ContamlabError(f"{group}.{key}={_show(value)}: must be {rule[1]}")


def _model_paths(cfg: DictConfig) -> Iterator[tuple[str, str]]:
    for which in ("clean", "contaminated"):
        present, value = _get(cfg, f"model.{which}")
        if present and value is not None:
            yield which, value


def _check_model_sources(cfg: DictConfig) -> None:
    """``model.clean`` / ``model.contaminated``: a hub id or an existing directory, the clean one first."""
    for which, value in _model_paths(cfg):
        if not isinstance(value, str) or not value.strip():
            raise ContamlabError(f"model.{which}={_show(value)}: give a hub id (owner/name) or a model directory")
        if looks_like_path(value) and not Path(value).expanduser().is_dir():
            raise ContamlabError(
                f"model.{which}={value}: directory not found; give the directory of a saved model "
                "(config.json or adapter_config.json) or a hub id (owner/name)"
            )


# Precisions every Lightning 2.x accepts; any other value is checked against Lightning's own list.
_COMMON_PRECISIONS = {"32-true", "32", "bf16-mixed", "16-mixed", "bf16-true", "16-true", "64-true", "64"}


def _check_audit_models(cfg: DictConfig) -> None:
    """``audit.target`` and ``audit.references``: each a model reference that parses, a directory one existing.

    The types are checked here; what a reference may say (not empty, a seed after ``@``) is :meth:`ModelRef.parse`'s.
    """
    for key in ("audit.target", "audit.references"):
        present, value = _get(cfg, key)
        if not present:
            continue
        single = key == "audit.target"
        if not (
            isinstance(value, str) if single else isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ContamlabError(
                f"{key}={_show(value)}: must be {'a model' if single else 'a list of models ([] for none)'}"
            )
        for ref in [value] if single else value:
            ModelRef.parse(ref, key).check_exists(key)


#: The keyword settings of the audit's item sources; anything else names a JSONL file.
NONMEMBER_KEYWORDS = ("auto", "generated", "train", "rewrites")
POOL_KEYWORDS = ("auto", "generated")


def _check_audit_items(cfg: DictConfig) -> None:
    """``audit.nonmembers``, ``audit.error_rates.pool`` (a keyword or a .jsonl file) and ``audit.shift_null.file``.

    Checked here, before anything loads: a mistyped file would otherwise stop the audit after its models converted.
    """
    for key, keywords, optional_ in (
        ("audit.nonmembers", NONMEMBER_KEYWORDS, False),
        ("audit.error_rates.pool", POOL_KEYWORDS, True),
        ("audit.shift_null.file", (), True),
    ):
        present, value = _get(cfg, key)
        if not present or (value is None and optional_):
            continue
        kind = "a .json artifact" if not keywords else "a .jsonl file"
        use = f"use {', '.join(keywords)} or " if keywords else "give "
        if not isinstance(value, str) or not value.strip():
            raise ContamlabError(f"{key}={_show(value)}: {use}{kind}")
        if value not in keywords and not Path(value).expanduser().is_file():
            raise ContamlabError(f"{key}={value}: no such file; {use}an existing {kind.split(' ', 1)[1]}")


def _check_audit_names(cfg: DictConfig) -> None:
    """``audit.detectors`` and ``audit.mitigate``: names of the audit's ``detectors`` and ``strategies`` groups."""
    for key, group in (("audit.detectors", "detectors"), ("audit.mitigate", "strategies")):
        present, names = _get(cfg, key)
        known = list(cfg.get(group) or {})
        for name in names if present and isinstance(names, list) else []:
            if name not in known:
                kind = "detector" if group == "detectors" else "strategy"
                raise ContamlabError(f"{key}: no {kind} {name!r}; choose from {', '.join(known)}")


def _check_precision(cfg: DictConfig) -> None:
    present, value = _get(cfg, "trainer.precision")
    if not present or str(value) in _COMMON_PRECISIONS:
        return  # importing Lightning to ask takes ~10 s on a small machine; it decides only the unusual values
    from typing import get_args

    from lightning.fabric.connector import _PRECISION_INPUT

    valid = set()
    for member in get_args(_PRECISION_INPUT):  # a Union of Literals of ints and strings
        valid.update(str(v) for v in (get_args(member) or (member,)))
    if str(value) not in valid:
        raise ContamlabError(f"trainer.precision={_show(value)}: use 32-true, bf16-mixed, 16-mixed, 64-true …")


def _check_device(cfg: DictConfig) -> None:
    """``model.device``: a device this machine has (``cuda`` on a CPU-only machine stops here, not after a load)."""
    present, value = _get(cfg, "model.device")
    if present and value not in ("auto", "cpu"):  # any other name is checked with torch (a second or more)
        from contamlab.models.placement import check_device

        check_device(value)


def validate(cfg: DictConfig) -> None:
    """Check a composed train, evaluate or audit config; raise :class:`ContamlabError` naming the first bad field.

    Cheap (no data, no model; torch only for the groups' signatures): :func:`contamlab.config.run_safely` calls it
    before it imports the job.
    """
    task = cfg.get("task")
    _check_rules(cfg, COMMON)
    if task == "evaluate":
        _check_rules(cfg, EVALUATE)
        backend = cfg.sampler.get("name") if isinstance(cfg.get("sampler"), DictConfig) else None
        _check_rules(cfg, SAMPLERS.get(str(backend), {}))
        _check_device(cfg)
        _check_model_sources(cfg)
        for group in ("model", "sampler", "strategy", "detector", "domain", "logger"):
            _check_group(cfg, group)  # imports each target's module (torch for most): after the cheap checks
    elif task == "audit":
        _check_rules(cfg, AUDIT)
        _check_audit_models(cfg)
        _check_audit_items(cfg)
        _check_audit_names(cfg)
        backend = cfg.sampler.get("name") if isinstance(cfg.get("sampler"), DictConfig) else None
        _check_rules(cfg, SAMPLERS.get(str(backend), {}))
        _check_device(cfg)
        packaged = [f"detectors.{k}" for k in cfg.get("detectors", {})] + [
            f"strategies.{k}" for k in cfg.get("strategies", {})
        ]
        for group in ("model", "sampler", "domain", "logger", *packaged):
            _check_group(cfg, group)
    elif task == "train":
        _check_rules(cfg, TRAIN)
        ft = cfg.finetune
        if int(ft.global_batch) % int(ft.micro_batch):
            raise ContamlabError(
                f"finetune.global_batch={ft.global_batch} must be a multiple of micro_batch={ft.micro_batch}"
            )
        _check_precision(cfg)
        for group in ("model", "domain", "logger"):
            _check_group(cfg, group)
