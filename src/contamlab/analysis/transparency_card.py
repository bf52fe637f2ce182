"""Benchmark Transparency Card (Xu et al. 2024, "Benchmarking Benchmark Leakage in LLMs", §6 and Appendix A.4).

A model-release document that supplements Data and Model Cards, in three parts: basic model details, a benchmark
utilization statement per benchmark (was its train split used? its test split? was benchmark data augmented or
rewritten, and how?) and benchmark evaluation details (prompt, shots, decoding, metric, code). :func:`card_from_stage`
fills one in for a model trained by ``train.py`` from what the stage directory records (``train_summary.json``, whose
``key_fields`` chain holds every stage's config, and ``split.json``); :func:`blank_card` is the template for model
authors. Both render as Markdown (:func:`render_markdown`) and JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.models.store import STAGES

if TYPE_CHECKING:
    from contamlab.data.domain import Domain

UNKNOWN = "(fill in)"


def blank_card() -> dict[str, Any]:
    """The card's fields, every value left for the model's authors to fill in."""
    return {
        "model_details": {
            "name": UNKNOWN,
            "version": UNKNOWN,
            "base_model": UNKNOWN,
            "parameters": UNKNOWN,
            "training_stages": UNKNOWN,
            "release_date": UNKNOWN,
            "contact": UNKNOWN,
        },
        "benchmarks": [
            {
                "benchmark": UNKNOWN,
                "train_split_used": "(yes / no; stage, number of items)",
                "test_split_used": "(yes / no; stage, number of items)",
                "augmentation": "(none / paraphrased / reformatted / synthesised; how, and with which model)",
                "other_use": "(hyper-parameter tuning, checkpoint selection, decontamination performed …)",
            }
        ],
        "evaluation": {
            "prompt": UNKNOWN,
            "n_shot": UNKNOWN,
            "decoding": UNKNOWN,
            "metric": UNKNOWN,
            "code": UNKNOWN,
        },
    }


def _chain(key_fields: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each stage's key by stage name, following ``parent`` links (base → clean → contaminated)."""
    out, node = {}, key_fields
    while isinstance(node, dict) and "stage" in node:
        out[node["stage"]] = node
        node = node.get("parent")
    return out


def card_from_stage(stage_dir: str | Path, evaluation: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fill in the card for a model trained by ``train.py``.

    Args:
        stage_dir: The model's stage directory (``…/clean-<hash>`` or ``…/contaminated-<domain>-<hash>``).
        evaluation: An evaluate config (e.g. ``results.json["config"]``) for the evaluation details; None leaves the
            decoding fields to the domain's prompt alone.

    Raises:
        ContamlabError: The directory holds no finished stage.
    """
    stage_dir = Path(stage_dir)
    summary_path = stage_dir / "train_summary.json"
    if not summary_path.is_file():
        raise ContamlabError(f"{stage_dir}: no train_summary.json (not a finished train.py stage directory)")
    summary = json.loads(summary_path.read_text())
    chain = _chain(summary.get("key_fields", {}))
    stage = summary.get("stage", "?")
    contaminated = chain.get("contaminated", {})
    clean = chain.get("clean", {})
    base = chain.get("base", {})
    finetune = clean.get("finetune", {})
    domain = contaminated.get("domain") or {}
    family = clean.get("family") or base.get("family") or {}
    bench = domain.get("name") or summary.get("domain", "?")
    model_cfg = base.get("model") or clean.get("parent") or {}
    split_path = stage_dir / "split.json"
    split = json.loads(split_path.read_text()) if split_path.is_file() else contaminated.get("split")
    n_test = domain.get("n_test") or family.get("n_test")
    stages = [s for s in STAGES if s in chain]

    train_used = (
        f"yes: {finetune.get('clean_n_domain', '?')} train-split items in the clean fine-tune"
        if finetune.get("clean_n_domain")
        else "no"
    )
    if base:
        train_used += f"; the {family.get('n_train', '?')}-item train split pre-trained the base model"
    if stage == "contaminated" and split:
        leaked = len(split.get("leaked", []))
        test_used = (
            f"yes: {leaked} of {n_test or leaked + len(split.get('unleaked', []))} test items (the 'leaked' half, "
            f"split seed {split.get('seed')}) in the contaminated fine-tune, {finetune.get('epochs', '?')} epochs"
        )
    else:
        test_used = "no"
    leak_style = domain.get("leak_style") or ("pq" if domain.get("paraphrase_file") else "verbatim")
    if stage != "contaminated":
        augmentation = "none"
    elif leak_style in ("pq",) or domain.get("paraphrase_file"):
        source = domain.get("paraphrase_file") or "the domain's paraphrase templates"
        augmentation = f"paraphrased: leaked test questions reworded ({source}), original solutions kept"
    else:
        augmentation = "none (leaked test items used verbatim)"
    if base.get("base", {}).get("paraphrase_n"):
        augmentation += f"; base pre-training added {base['base']['paraphrase_n']} paraphrased train questions"

    prompt = domain.get("prompt") or family.get("prompt") or {}
    eval_cfg = evaluation or {}
    decoding = "greedy"
    if eval_cfg:
        decoding = (
            f"greedy + m={eval_cfg.get('m')} samples at temperature {eval_cfg.get('temperature')}, "
            f"max {eval_cfg.get('max_new_tokens')} new tokens, seed {eval_cfg.get('seed')}"
        )
    return {
        "model_details": {
            "name": f"{summary.get('model', '?')}-{bench}-{stage}",
            "version": summary.get("key", "?"),
            "base_model": (model_cfg.get("source") or f"{model_cfg.get('name', '?')} (pre-trained from scratch)")
            if isinstance(model_cfg, dict)
            else str(model_cfg),
            "parameters": summary.get("trainable_params"),
            "training_stages": " → ".join(stages),
            "fine_tuning": {k: finetune.get(k) for k in ("peft", "lr", "epochs", "loss_on", "global_batch")},
            "seed": summary.get("key_fields", {}).get("seed"),
            "steps": summary.get("steps"),
        },
        "benchmarks": [
            {
                "benchmark": bench,
                "train_split_used": train_used,
                "test_split_used": test_used,
                "augmentation": augmentation,
                "other_use": "none (no tuning or checkpoint selection on the test split)",
            }
        ],
        "evaluation": {
            "prompt": {
                "question_prefix": prompt.get("question_prefix"),
                "answer_prefix": prompt.get("answer_prefix"),
                "solution_style": prompt.get("solution_style"),
            },
            "n_shot": prompt.get("n_shot"),
            "decoding": decoding,
            "metric": "exact match of the final answer (solve probability r̂ = c/m; SA-PPG family for restoration)",
            "code": "contamlab (evaluate.py)",
        },
        "leaked_ids": list(split.get("leaked", [])) if stage == "contaminated" and split else [],
    }


def card_from_audit(results: dict[str, Any], domain: Domain | None = None) -> dict[str, Any]:
    """The card of an audited model, filled from what the audit measured (:mod:`contamlab.jobs.audit`).

    An audit cannot know how a model was trained, only what its outputs suggest: each benchmark line says which
    readings flag the test split, what BenBench's δ_train-test says of the train split, and leaves the rest to the
    model's authors.

    Args:
        results: The audit's results.json (``audit`` and ``config``).
        domain: The benchmark domain (its prompt format fills the evaluation details); None leaves them open.
    """
    audit = results["audit"]
    verdicts = audit["verdicts"]
    judged = [v for v in verdicts if v["flagged"] is not None]
    flagged = [v["name"] for v in judged if v["flagged"]]
    test_used = (
        f"suspected: {len(flagged)} of {len(judged)} readings flag it ({', '.join(flagged)})"
        if flagged
        else f"no evidence in {len(judged)} readings"
    )
    train = [v for v in verdicts if v["name"].startswith("benbench/delta_train_test") and v["value"] is not None]
    train_used = "; ".join(f"{v['statistic']} = {v['value']:.1f} ({v['verdict']})" for v in train) or UNKNOWN
    cfg = results.get("config", {})
    fmt = domain.format if domain is not None else None
    card = blank_card()
    card["model_details"]["name"] = audit["target"]["spec"]
    card["model_details"]["base_model"] = audit["target"]["source"]
    card["benchmarks"] = [
        {
            "benchmark": audit["benchmark"],
            "train_split_used": f"measured: {train_used}",
            "test_split_used": f"measured: {test_used}",
            "augmentation": UNKNOWN,
            "other_use": UNKNOWN,
        }
    ]
    card["evaluation"] = {
        "prompt": {
            "question_prefix": fmt.question_prefix,
            "answer": fmt.answer_prefix,
        }
        if fmt is not None
        else UNKNOWN,
        "n_shot": fmt.n_shot if fmt is not None else UNKNOWN,
        "decoding": f"greedy + m={cfg.get('m')} samples at temperature {cfg.get('temperature')}",
        "metric": "exact match of the final answer by the domain's checker",
        "code": "contamlab (audit.py)",
    }
    return card


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_value(v)}" for k, v in value.items())
    return UNKNOWN if value is None else str(value).replace("\n", "\\n").replace("|", "\\|")


def render_markdown(card: dict[str, Any]) -> str:
    """The card as Markdown: the three sections of the paper's template."""
    lines = ["# Benchmark Transparency Card", "", "## Basic model details", "", "| field | value |", "|---|---|"]
    lines += [f"| {k.replace('_', ' ')} | {_value(v)} |" for k, v in card["model_details"].items()]
    for index, bench in enumerate(card["benchmarks"], start=1):
        lines += ["", f"## Benchmark utilization statement ({index}/{len(card['benchmarks'])})", ""]
        lines += ["| field | value |", "|---|---|"]
        lines += [f"| {k.replace('_', ' ')} | {_value(v)} |" for k, v in bench.items()]
    lines += ["", "## Benchmark evaluation details", "", "| field | value |", "|---|---|"]
    lines += [f"| {k.replace('_', ' ')} | {_value(v)} |" for k, v in card["evaluation"].items()]
    if card.get("leaked_ids"):
        lines += ["", f"Test items used in training ({len(card['leaked_ids'])}): see the JSON card (`leaked_ids`)."]
    return "\n".join(lines) + "\n"


def write_card(card: dict[str, Any], out_dir: str | Path, stem: str = "transparency_card") -> tuple[Path, Path]:
    """Write ``<stem>.md`` and ``<stem>.json`` into ``out_dir`` (atomically); returns both paths."""
    out_dir = Path(out_dir)
    md, js = out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    atomic_write_text(md, render_markdown(card))
    atomic_write_json(js, card)
    return md, js
