"""Where BenBench's time goes in one audit: the model's own forward passes against the token work no model changes.

    python benchmarks/benbench_profile.py                          # profile the audit below (about 19 min on 2 cores)
    python benchmarks/benbench_profile.py --from-profile F --run-dir D   # summarise an earlier profile of it

The audit is SmolLM2-135M's packaged model on 20 items of the real-LM world's benchmark with BenBench alone
(``audit.detectors=[benbench]``): each item, its three rewrites and 48 train problems, by perplexity and by 5- and
10-gram accuracy. Under ``cProfile`` the script sums, by cumulative time, the parts that a second model would redo
(the forward passes: the perplexity pass and the n-gram continuations) and the parts it would not (tokenising the
texts and prompts, decoding, the rewrites, the string similarities). The second group bounds what sharing BenBench's
token work across the models of a study could save. Writes ``benchmarks/results/benbench_profile-smollm2.json``.
"""

from __future__ import annotations

import argparse
import json
import pstats
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AUDIT = [
    "audit.py",
    "experiment=real_world",
    "model=smollm2",
    "domain.generator.n_test=20",
    "audit.target=base",
    "audit.references=[]",
    "audit.detectors=[benbench]",
    "audit.mitigate=[]",
    "progress=false",
]
#: Cumulative-time entries (file:function patterns) of each part; the largest matching entry counts.
PARTS = {
    "BenBench's score (all of it)": r"detectors/benbench\.py:\d+\(score\)$",
    "perplexity pass (score_sequences)": r"detectors/scoring\.py:\d+\(score_sequences\)$",
    "n-gram continuations (teacher_forced_ngrams)": r"detectors/continuation\.py:\d+\(teacher_forced_ngrams\)$",
    "model forward calls (torch Module calls)": r"torch/nn/modules/module\.py:\d+\(_call_impl\)$",
    "tokenising (tokenizer calls)": r"tokenization_utils_base\.py:\d+\(__call__\)$",
    "decoding tokens to text": r"tokenization_utils_base\.py:\d+\(decode\)$",
    "rewrites (reference_versions)": r"detectors/paraphrase\.py:\d+\(reference_versions\)$",
    "ROUGE-L and edit similarity": r"detectors/benbench\.py:\d+\((rouge_l|edit_similarity)\)$",
}
MODEL_FREE = ("tokenising (tokenizer calls)", "decoding tokens to text", "rewrites (reference_versions)")


def summarise(profile: Path) -> dict[str, float]:
    """Seconds of each part of :data:`PARTS` (cumulative time of the largest matching entry; 0 when none)."""
    stats = pstats.Stats(str(profile)).stats
    names = {f"{file}:{line}({func})": entry[3] for (file, line, func), entry in stats.items()}
    out = {}
    for part, pattern in PARTS.items():
        found = [seconds for name, seconds in names.items() if re.search(pattern, name)]
        out[part] = round(max(found, default=0.0), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-profile", type=Path, help="a cProfile file of the audit (skips the run)")
    parser.add_argument("--run-dir", type=Path, help="that audit's output folder (its results.json: commit, machine)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "benbench_profile-smollm2.json")
    args = parser.parse_args()
    if args.from_profile is None:
        work = Path(tempfile.mkdtemp(prefix="contamlab-benbench-"))
        args.from_profile, args.run_dir = work / "audit.prof", work / "audit"
        profiler = [sys.executable, "-m", "cProfile", "-o", str(args.from_profile)]
        subprocess.run([*profiler, *AUDIT, f"hydra.run.dir={work}/audit"], cwd=REPO, check=True)
    if args.run_dir is None:
        raise SystemExit("--from-profile needs --run-dir: the audit's output folder, for its commit and machine")
    seconds = summarise(args.from_profile)
    total = seconds["BenBench's score (all of it)"]
    model_free = sum(seconds[p] for p in MODEL_FREE)
    run = json.loads((args.run_dir / "results.json").read_text())["run"]
    result = {
        "command": "python -m cProfile -o audit.prof " + " ".join(AUDIT),
        "run": {k: run[k] for k in ("git_commit", "git_dirty", "machine")},
        "seconds": seconds,
        "share_of_benbench": {p: round(s / total, 4) for p, s in seconds.items()} if total else {},
        "model_free_share": round(model_free / total, 4) if total else None,
    }
    for part, s in seconds.items():
        print(f"{part:50s} {s:9.1f} s  {s / total:6.1%}" if total else f"{part:50s} {s:9.1f} s")
    print(f"what a second model would not redo: {model_free:.1f} s ({model_free / total:.1%} of BenBench)")
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
