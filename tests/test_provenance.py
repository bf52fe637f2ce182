"""provenance: which changes of a checkout make a run's tree count as dirty (hand-written `git status` output)."""

from __future__ import annotations

import subprocess

from contamlab.provenance import changed_code, changed_paths, cpu_description


def test_prose_and_results_do_not_make_a_run_dirty_and_code_does():
    # the first line as _git returns it (stripped: its leading space gone), a rename, a staged config
    status = "M docs/results.md\n M README.md\nR  src/a.py -> src/b.py\nM  configs/m.yaml\n M results/x/run.json"
    assert changed_paths(status) == ["docs/results.md", "README.md", "src/b.py", "configs/m.yaml", "results/x/run.json"]
    assert changed_code(status) == ["src/b.py", "configs/m.yaml"]
    assert changed_code("M docs/results.md\n M CHANGELOG.md") == []


def test_the_paths_are_those_git_prints_for_a_real_checkout(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    (tmp_path / "docs").mkdir()
    for name in ("docs/page.md", "train.py"):
        (tmp_path / name).write_text("a\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (tmp_path / "docs/page.md").write_text("b\n")
    assert changed_code(git("status", "--porcelain", "--untracked-files=no").strip()) == []
    (tmp_path / "train.py").write_text("b\n")
    assert changed_code(git("status", "--porcelain", "--untracked-files=no").strip()) == ["train.py"]


def test_the_cpu_is_described_by_its_first_processor_and_its_kernel_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse2 avx2 amx_tile avx512f\n\n"
        "processor\t: 1\nmodel name\t: Another\nflags\t\t: fpu\n"
    )
    cpu = cpu_description(info)
    assert cpu["model"] == "Intel(R) Xeon(R) Processor"
    assert cpu["kernel_flags"] == ["avx2", "avx512f", "amx_tile"]  # in KERNEL_FLAGS' order, AVX-512's bf16 absent
    missing = cpu_description(tmp_path / "absent")
    assert missing["model"] is None and missing["kernel_flags"] == []
