"""Benchmark Transparency Card: filled in from a trained stage directory, and the blank template."""

import json
import sys

import prewarmed
import pytest
from e2e import REPO, stage_dirs

from contamlab.analysis.transparency_card import blank_card, card_from_stage, render_markdown, write_card
from contamlab.errors import ContamlabError


def test_blank_template_has_the_three_sections(tmp_path):
    text = render_markdown(blank_card())
    for section in ("Basic model details", "Benchmark utilization statement", "Benchmark evaluation details"):
        assert f"## {section}" in text
    assert "train split used" in text and "test split used" in text and "augmentation" in text
    assert "## Basic model details" in (REPO / "docs" / "transparency_card_template.md").read_text()


def test_card_from_trained_stages(trained, tmp_path):
    tmp, _, _ = trained
    stages = stage_dirs(tmp)
    card = card_from_stage(stages["contaminated-arith"], {"m": 4, "temperature": 0.7, "max_new_tokens": 24, "seed": 0})
    bench = card["benchmarks"][0]
    assert bench["test_split_used"].startswith("yes: 10 of 20 test items")
    assert bench["train_split_used"].startswith("yes")
    assert card["model_details"]["training_stages"] == "base → clean → contaminated"
    assert len(card["leaked_ids"]) == 10 and "m=4" in card["evaluation"]["decoding"]
    clean = card_from_stage(stages["clean"])
    assert clean["benchmarks"][0]["test_split_used"] == "no" and clean["leaked_ids"] == []
    md, js = write_card(card, tmp_path)
    assert "| test split used | yes: 10 of 20" in md.read_text()
    assert json.loads(js.read_text())["benchmarks"][0]["benchmark"] == "arith"
    with pytest.raises(ContamlabError, match="train_summary.json"):
        card_from_stage(tmp_path)
    result = prewarmed.run(
        [sys.executable, str(REPO / "scripts" / "transparency_card.py"), str(stages["clean"]), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "transparency_card.md").is_file()


def test_card_from_audit_reads_the_verdicts_and_the_domains_prompt(data_dir):
    from contamlab.analysis.transparency_card import card_from_audit
    from contamlab.config import build, compose

    verdict = {"name": "loss", "flagged": True, "value": 0.8, "statistic": "AUROC", "verdict": "x"}
    results = {
        "audit": {
            "target": {"spec": "contaminated", "source": "smollm2"},
            "benchmark": "arith",
            "verdicts": [
                verdict,
                {**verdict, "name": "zlib", "flagged": False},
                {**verdict, "name": "cdd", "flagged": None},
            ],
        },
        "config": {"m": 8, "temperature": 0.7},
    }
    domain = build(compose("evaluate", ["domain=arith", "domain.prompt.n_shot=2"]).domain, "domain")
    card = card_from_audit(results, domain)
    assert card["benchmarks"][0]["test_split_used"] == "measured: suspected: 1 of 2 readings flag it (loss)"
    assert card["evaluation"]["prompt"] == {"question_prefix": "Question: ", "answer": domain.format.answer_prefix}
    assert card["evaluation"]["n_shot"] == 2 and "m=8" in card["evaluation"]["decoding"]
    open_card = card_from_audit(results)  # no domain: the prompt is left for the authors to fill in
    assert open_card["evaluation"]["prompt"] == "(fill in)" and open_card["evaluation"]["n_shot"] == "(fill in)"
