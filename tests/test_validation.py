"""Every bad value stops the job before any model loads: one line naming the field, exit status 2."""

import re
import sys

import prewarmed
import pytest
from e2e import REPO, evaluate, train

from contamlab.config import compose
from contamlab.errors import ContamlabError
from contamlab.validation import validate

# (override, text the one error line must contain). Each of these once gave a traceback (exit 1), or failed only
# after the clean model's greedy pass (temperature=-1).
BAD_EVALUATE = [
    ("temperature=abc", "temperature='abc': must be a number > 0"),
    ("temperature=-1", "temperature=-1: must be a number > 0"),
    ("m=abc", "m='abc': must be an integer >= 1"),
    ("seed=abc", "seed='abc': must be an integer >= 0"),
    ("chunk_questions=0", "chunk_questions=0: must be an integer >= 1"),
    ("+sampler.temperature=5", "sampler.temperature: not a setting of sampler=hf"),
    ("model.clean=/nonexistent", "model.clean=/nonexistent: directory not found"),
]


@pytest.mark.parametrize(("override", "message"), BAD_EVALUATE, ids=[o for o, _ in BAD_EVALUATE])
def test_bad_value_stops_before_any_model_loads(trained, tmp_path, override, message):
    tmp, _, _ = trained
    cache = tmp_path / "cache"  # a model that loads writes its greedy pass here first
    result = evaluate(tmp, "strategy=railcap", override, f"paths.cache_dir={cache}", tag="bad-value")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("contamlab: error: ") and message in lines[0], result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    # read off what was written, not off the wall clock (benchmarks/latency.py times how soon the line comes)
    assert not cache.exists(), "a model was loaded and sampled before the error"


def test_bad_train_value_is_one_line(tmp_path):
    result = train(tmp_path, "base.steps=abc", tag="bad")
    assert result.returncode == 2
    assert result.stderr.strip() == "contamlab: error: base.steps='abc': must be an integer >= 1"
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize(
    ("config", "override", "message"),
    [
        ("evaluate", "metric.confidence=1.5", "metric.confidence=1.5: must be a number in (0, 1]"),
        ("evaluate", "sampler.draw=gumbel", "sampler.draw='gumbel': must be multinomial or inverse_cdf"),
        ("evaluate", "sampler.batch_rows=0", "sampler.batch_rows=0: must be an integer >= 1"),
        ("evaluate", "max_new_tokens=0", "max_new_tokens=0: must be an integer >= 1"),
        ("evaluate", "domain.max_test=abc", "domain.max_test='abc': must be an integer, or null"),
        ("evaluate", "+strategy.alpha=1", "strategy.alpha: not a setting of strategy=identity"),
        ("evaluate", "model.dtype=fp8", "model.dtype='fp8': must be one of auto, float32, bfloat16 or float16"),
        ("train", "finetune.lr=0", "finetune.lr=0: must be a number > 0"),
        ("train", "domain.leak_lr=abc", "domain.leak_lr='abc': must be a number > 0, or null"),
        ("train", "+model.hiden_size=64", "model.hiden_size: not a setting of model=tiny"),
        ("evaluate", "+logger.project=x", "logger.project: not a setting of logger="),
        ("train", "trainer.precision=fp8", "trainer.precision='fp8'"),
        ("train", "base.betas=[0.9]", "base.betas=[0.9]"),
        ("train", "stage=pretrain", "stage='pretrain': must be one of base, clean, contaminated, sham or all"),
        ("audit", "audit.alpha=2", "audit.alpha=2: must be a number in (0, 1]"),
        ("audit", "audit.detectors=codec", "audit.detectors='codec': must be a list of names"),
        ("audit", "+detectors.codec.bogus=1", "detectors.codec.bogus: not a setting of detectors.codec=codec"),
        ("audit", "detectors.codec.n_context=x", "detectors.codec.n_context='x': must be an integer"),
        ("audit", "audit.target=/nonexistent", "audit.target=/nonexistent: directory not found"),
        ("audit", "audit.references=[./nowhere]", "audit.references=./nowhere: directory not found"),
        ("audit", "m=0", "m=0: must be an integer >= 1"),
        ("audit", "audit.error_rates.twins=0", "audit.error_rates.twins=0: must be an integer >= 1"),
        ("audit", "audit.error_rates.min_power=1.5", "audit.error_rates.min_power=1.5: must be a number in (0, 1]"),
        (
            "audit",
            "audit.error_rates.doses=[{epochs: 0}]",
            "audit.error_rates.doses=[{'epochs': 0}]: must be a non-empty",
        ),
        ("audit", "audit.error_rates.doses=[{lr: -1}]", "audit.error_rates.doses=[{'lr': -1}]: must be a non-empty"),
        ("audit", "audit.error_rates.doses=[]", "audit.error_rates.doses=[]: must be a non-empty list"),
        (
            "audit",
            "audit.error_rates.doses=[{fraction: 0}]",
            "audit.error_rates.doses=[{'fraction': 0}]: must be a non",
        ),
        ("audit", "audit.error_rates.doses=[{fraction: 1.5}]", "{'fraction': 1.5}]: must be a non-empty list of"),
        ("audit", "audit.error_rates.pool_size=3", "audit.error_rates.pool_size=3: must be an integer >= 20, or null"),
        # the item files, the model references and the names: each checked here once, before anything loads
        ("audit", "audit.error_rates.pool=/none.jsonl", "audit.error_rates.pool=/none.jsonl: no such file"),
        ("audit", "audit.nonmembers=/nonexistent.jsonl", "audit.nonmembers=/nonexistent.jsonl: no such file"),
        ("audit", "audit.shift_null.file=/none.json", "audit.shift_null.file=/none.json: no such file; give an"),
        ("audit", "audit.shift_null.condition=wording", "audit.shift_null.condition='wording': must be one of auto"),
        ("audit", "audit.shift_null.max_rate=2", "audit.shift_null.max_rate=2: must be a number in [0, 1]"),
        ("audit", "audit.target=' '", "audit.target: an empty model reference"),
        ("audit", "audit.target=5", "audit.target=5: must be a model"),
        ("audit", "audit.references=[1]", "audit.references=[1]: must be a list of models"),
        ("audit", "audit.references=[clean@x]", "audit.references=clean@x: the seed after @ must be a non-negative"),
        ("audit", "audit.detectors=[lossy]", "audit.detectors: no detector 'lossy'; choose from codec"),
        ("audit", "audit.mitigate=[railcapp]", "audit.mitigate: no strategy 'railcapp'; choose from identity"),
    ],
)
def test_validate_names_the_field(config, override, message):
    cfg = compose(config, [override])
    with pytest.raises(ContamlabError) as err:
        validate(cfg)
    assert message in str(err.value)


@pytest.mark.parametrize("config", ["evaluate", "train", "audit"])
@pytest.mark.parametrize(
    "overrides",
    [[], ["model=smollm2", "domain=gsm8k"], ["model=pythia", "sampler=vllm"], ["strategy=railcap", "detector=codec"]],
)
def test_shipped_configs_are_valid(config, overrides):
    if config in ("train", "audit"):
        keep = ("model", "domain", "sampler") if config == "audit" else ("model", "domain")
        overrides = [o for o in overrides if o.split("=")[0] in keep]
    validate(compose(config, overrides))


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "configs" / "experiment").glob("*.yaml")))
def test_experiments_are_valid(name):
    validate(compose("evaluate", [f"experiment={name}"]))


def test_headline_command_on_a_cpu_says_what_to_run(tmp_path):
    """`evaluate.py -m strategy=railcap,lne,ted model=pythia` with no trained Pythia: valid values, working commands."""
    args = [sys.executable, str(REPO / "evaluate.py"), "-m", "strategy=railcap,lne,ted", "model=pythia"]
    args += [f"paths.models_dir={tmp_path / 'models'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    result = prewarmed.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("contamlab: error:")]
    assert "model=pythia-12b" not in line and "model=pythia " in line  # the option, not the model's name
    assert "EleutherAI/pythia-12b" in line and "GPU" in line and "model.source=" in line
    assert "model=tiny" in line and "model=smollm2" in line and "model.clean=" in line  # what runs offline
    commands = re.findall(r"`(python (?:train|evaluate)\.py[^`]*)`", line)
    assert "python train.py model=pythia domain=gsm8k trainer=gpu" in commands
    for command in commands:  # every group=option in a suggested command names a real config file
        for group, option in re.findall(r"\b(model|domain|trainer|strategy)=([\w,]+)", command):
            for each in option.split(","):
                assert (REPO / "configs" / group / f"{each}.yaml").is_file(), (command, group, each)
    assert "train.py model=pythia domain=arith" not in line  # arith is the tiny world's domain, not Pythia's


@pytest.mark.parametrize(
    "override",
    [
        f"{group}={p.stem}"
        for group in ("strategy", "detector", "sampler", "domain", "model", "railcap_ablation")
        for p in sorted((REPO / "configs" / group).glob("*.yaml"))
    ],
)
def test_every_shipped_option_is_valid(override):
    # A key that a group's YAML ships but its target does not take (and the job does not read) would stop every run.
    extra = ["strategy=railcap"] if override.startswith("railcap_ablation=") else []
    validate(compose("evaluate", [*extra, override]))


def test_a_missing_pool_file_stops_an_audit_of_a_packaged_model_before_it_converts(tmp_path):
    """As a new user typed it: the pool's file was named only after SmolLM2 had converted (45 s). Now the process
    exits with the one line before the model store is built (no cache directory is made)."""
    cache = tmp_path / "cache"
    args = [
        sys.executable, str(REPO / "audit.py"), "model=smollm2", "domain=gsm8k", "audit.target=base",
        "audit.references=[]", "audit.error_rates.pool=/nonexistent.jsonl", f"paths.cache_dir={cache}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]  # fmt: skip
    result = prewarmed.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "audit.error_rates.pool=/nonexistent.jsonl: no such file" in result.stderr
    assert not cache.exists()
