"""Docs that cannot rot: every link and file reference in README.md and docs/ resolves, every command the README's code
blocks name exists, and the README's smoke test runs."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import DATA
from e2e import REPO, stamp

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
# A file named in backticks: a path with a directory or a known top-level file, ending in a file extension.
FILE_REF = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|yaml|md|sh|toml|json|jsonl))`")
# Where a module path such as `data/arith/cot.py` or a config such as `domain/arith.yaml` may live.
ROOTS = ("", "src/", "src/contamlab/", "configs/", "tests/")
# Files the docs name that a run creates, or that a user's data directory holds (not in the repository).
CREATED = {
    *("results.json", "report.md", "summary.csv", "per_question.csv", "split.json", "audit.md", "profile.md"),
    *("train_summary.json", "training_texts.jsonl", "meta.json", "transparency_card.md", "test.jsonl", "train.jsonl"),
}
# A bare file name (`gaps.py`) resolves when a file of that name is in the repository.
NAMES = {p.name for p in REPO.rglob("*") if p.is_file() and not {".git", ".venv", "outputs"} & set(p.parts)}


def broken_links(page: Path) -> list[str]:
    """Relative links of ``page`` whose target (without its #anchor) does not exist."""
    text = page.read_text()
    missing = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, mailto, or an anchor in the page itself
        path = target.split("#")[0]
        if not (page.parent / path).exists():
            missing.append(target)
    return missing


def missing_files(page: Path) -> list[str]:
    """File names in backticks (no ``path:line``) that exist nowhere in the repository's usual roots."""
    text = page.read_text()
    missing = []
    for ref in FILE_REF.findall(text):
        if any(c in ref for c in "<>*{}$") or Path(ref).name in CREATED or ref.startswith(("outputs/", "~", "/")):
            continue
        if "/" not in ref and ref in NAMES:
            continue
        # the data files (CONTAMLAB_DATA_DIR) count as resolved: the docs name them as the data directory's layout
        if (
            not any((REPO / root / ref).exists() or (page.parent / ref).exists() for root in ROOTS)
            and not (DATA / ref).exists()
        ):
            missing.append(ref)
    return missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_and_file_reference_resolves(page):
    assert not broken_links(page), f"{page.name}: broken links {broken_links(page)}"
    assert not missing_files(page), f"{page.name}: files that do not exist {missing_files(page)}"


def test_the_checker_fails_on_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text("[ok](there.md#a) [gone](missing.md) ![fig](img/none.png) [web](https://x.org) `nope/none.py`\n")
    assert broken_links(page) == ["missing.md", "img/none.png"]
    assert missing_files(page) == ["nope/none.py"]


# The pages that hold measurements (numbers, per-seed values, run times and their provenance). Every other page of
# docs/ is a reference page: what the tool does and how to run it, with no commit hash (provenance lives in the
# committed result artifacts and in CHANGELOG.md).
RESULTS_PAGES = {"results.md", "results_evidence.md", "results_audit.md", "performance.md"}
REFERENCE_PAGES = [p for p in PAGES if p.parent == REPO or p.relative_to(REPO / "docs").as_posix() not in RESULTS_PAGES]
# A commit hash, or anything that reads as one (7 to 40 hex digits: write a large number with commas, 1,000,000).
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
README_MAX_LINES = 200


def test_the_results_pages_exist_and_the_rest_are_reference_pages():
    docs = {p.relative_to(REPO / "docs").as_posix() for p in PAGES if p.parent != REPO}
    assert docs >= RESULTS_PAGES, RESULTS_PAGES - docs
    for page in ("README.md", "docs/README.md", "docs/audit.md", "docs/real_world.md", "docs/methods/detectors.md"):
        assert REPO / page in REFERENCE_PAGES, page


@pytest.mark.parametrize("page", REFERENCE_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_reference_pages_name_no_commit(page):
    hits = [f"{n}: {m.group()}" for n, line in enumerate(page.read_text().splitlines(), 1) for m in HEX.finditer(line)]
    assert not hits, f"{page.relative_to(REPO)} names commit hashes (or hex-looking tokens): {hits}"


def test_the_readme_is_a_manual_of_at_most_200_lines():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines, at most {README_MAX_LINES}"


def test_the_hash_checker_finds_a_hash_and_not_a_number():
    assert HEX.findall("at commit 3709078, 1,000,000 items, d827000 and 0.0013") == ["3709078", "d827000"]
    assert not HEX.findall("SA-PPG 0.287, 3,000 steps, Q4_K_M, 02:40, clean@1, fp32")


def test_the_docs_index_lists_every_page():
    index = (REPO / "docs" / "README.md").read_text()
    for page in PAGES:
        if page.parent != REPO and page.name != "README.md":
            assert str(page.relative_to(REPO / "docs")) in index, f"docs/README.md does not link {page.name}"


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```(?:bash|sh)?\n(.*?)```", text, flags=re.S)


def test_every_command_in_the_readme_exists():
    readme = (REPO / "README.md").read_text()
    targets = set(re.findall(r"^([a-z][a-z0-9_-]*):", (REPO / "Makefile").read_text(), flags=re.M))
    lines = [line.split("#")[0].strip() for block in _code_blocks(readme) for line in block.splitlines()]
    assert any(line.startswith("make ") for line in lines) and any("python " in line for line in lines)
    for line in lines:
        for target in re.findall(r"\bmake ([a-z][a-z0-9_-]*)", line):
            assert target in targets, f"README runs `make {target}`, which the Makefile does not define"
        for script in re.findall(r"\bpython (?!-)(\S+\.py)", line):
            assert (REPO / script).is_file(), f"README runs {script}, which does not exist"
        for module in re.findall(r"\bpython -m (contamlab[\w.]*)", line):
            path = REPO / "src" / Path(*module.split("."))
            assert path.with_suffix(".py").is_file() or (path / "__main__.py").is_file(), module


def _readme_entry_point_commands() -> list[tuple[str, list[str]]]:
    """Every ``python train.py|evaluate.py|audit.py …`` of the README: its task and overrides (continuations joined)."""
    import shlex

    out = []
    for block in _code_blocks((REPO / "README.md").read_text()):
        lines = re.sub(r"\\\n\s*", " ", block).splitlines()
        for command in (part for line in lines for part in re.split(r"&&|\|\||;", line.split(" #")[0])):
            words = shlex.split(command, comments=True)
            if len(words) > 1 and words[0] == "python" and words[1] in ("train.py", "evaluate.py", "audit.py"):
                out.append((words[1].removesuffix(".py"), [w for w in words[2:] if w != "-m"]))
    return out


def _first_of_sweep(override: str) -> str:
    """``strategy=railcap,lne`` -> ``strategy=railcap`` (a multirun's first job); lists and dicts are left whole."""
    key, _, value = override.partition("=")
    return override if value[:1] in "[{'\"" else f"{key}={value.split(',')[0]}"


@pytest.mark.parametrize(
    "task,overrides", _readme_entry_point_commands(), ids=lambda x: " ".join(x) if isinstance(x, list) else x
)
def test_every_readme_command_composes_a_valid_config(task, overrides, monkeypatch):
    """The README's commands, as a new user types them: each composes and passes validation (a multirun its first job).

    Checks the config alone (what ``run_safely`` checks before any work); the jobs themselves are tested elsewhere.
    """
    from contamlab.config import compose
    from contamlab.validation import validate

    monkeypatch.setenv("CONTAMLAB_DATA_DIR", str(DATA))
    cfg = compose(task, [_first_of_sweep(o) for o in overrides if not o.startswith("hydra.")])
    validate(cfg)


@pytest.mark.xdist_group("small_world")
def test_make_smoke_prints_a_result(small_world, tmp_path):
    """The README's smoke test, as written in the Makefile, on the session's small world (its training is skipped:
    the models are there already)."""
    smoke = tmp_path / "smoke"
    smoke.mkdir()
    shutil.copytree(small_world / "models", smoke / "models")
    done = subprocess.run(
        ["make", "-C", str(REPO), "smoke", f"SMOKE={smoke}", stamp()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "done already" in done.stdout + done.stderr  # the small world was reused, not trained again
    for row in ("| identity |", "| railcap |", "| Clean, 2nd batch |", "loss: AUROC", "How to read it"):
        assert row in out, out[-3000:]
    auroc = float(re.search(r"contaminated model (\d\.\d+)", out).group(1))
    assert auroc >= 0.6  # the small world's verbatim leak is detectable


def test_extending_lists_every_member_of_each_interface():
    """docs/extending.md's interface table names every public member each base type declares (fields aside)."""
    import dataclasses

    from contamlab.data.domain import Domain
    from contamlab.decoding.kv_cache import OwnCacheModel, PromptBoundCache
    from contamlab.decoding.strategy import StepHook, Strategy
    from contamlab.detectors.base import Detector
    from contamlab.models.spec import ModelSpec

    rows = {
        line.split("|")[1].strip().strip("`"): line.split("|")[2]
        for line in (REPO / "docs" / "extending.md").read_text().splitlines()
        if line.startswith("| `")
    }
    hooks = {"__call__", "_load_train", "_load_test", "_load_leak_texts"}  # the members a subclass writes
    for cls in (Domain, Detector, Strategy, StepHook, OwnCacheModel, PromptBoundCache, ModelSpec):
        path = f"{cls.__module__.removeprefix('contamlab.')}.{cls.__name__}"
        assert path in rows, f"docs/extending.md has no interface row for {path}"
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
        members = {n for n in vars(cls) if (not n.startswith("_") or n in hooks) and n not in fields}
        missing = sorted(n for n in members if f"`{n}" not in rows[path])
        assert not missing, f"{path}: not in docs/extending.md's interface table: {missing}"


# Pages whose prose quotes measurements: every number with two or three decimals in the prose must be one that a
# generated page or block (the page's own or docs/audit.md's) holds (a hand-copied number that no artifact gives fails
# here). The generated pages are compared with their artifacts by each study's own test.
GENERATED = [f"docs/results_{n}.md" for n in ("evidence", "shift", "restoration", "audit")]
QUOTED = re.compile(r"(?<![\d.])\d\.\d{2,3}(?!\d)")
BLOCK = re.compile(r"<!-- ([\w:]+):begin.*?-->(.*?)<!-- \1:end -->", flags=re.S)


def _section(text: str, heading: str | None) -> str:
    """The text under a ``## heading`` up to the next one (the whole page for None)."""
    if heading is None:
        return text
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


# real_world.md's recipe quotes docs/performance.md's timings (benchmarks/results/): its evidence section only
@pytest.mark.parametrize(
    "page, heading",
    [
        ("docs/real_world.md", "The evidence study"),
        ("docs/audit.md", None),
        ("docs/results.md", "A real LM: SmolLM2-135M"),
        ("README.md", "Workflow 3: audit a released model"),
        ("README.md", "Measured results"),
    ],
)
def test_numbers_quoted_in_the_prose_are_numbers_of_generated_tables(page, heading):
    text = _section((REPO / page).read_text(), heading)
    blocks = "".join(m.group(2) for m in BLOCK.finditer(text))
    audit_blocks = "".join(m.group(2) for m in BLOCK.finditer((REPO / "docs/audit.md").read_text()))
    source = blocks + audit_blocks + "".join((REPO / g).read_text() for g in GENERATED)
    quoted = set(QUOTED.findall(BLOCK.sub("", text)))
    assert quoted, f"{page} quotes no number: the test would prove nothing"
    assert not {n for n in quoted if n not in source}, f"{page}: numbers no generated table holds"


def test_the_quote_checker_finds_a_made_up_number():
    text = "<!-- x:begin (g) -->\n| 0.662 |\n<!-- x:end -->\nLoss read 0.662 and 0.999, at 1,000 steps and 2.5 min"
    assert set(QUOTED.findall(BLOCK.sub("", text))) == {"0.662", "0.999"}
    assert "0.662" in "".join(m.group(2) for m in BLOCK.finditer(text))
