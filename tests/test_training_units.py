import math

import pytest
import torch

from contamlab.config import load_domain
from contamlab.data.general import Example
from contamlab.models.tiny import train_tokenizer
from contamlab.training import corpus
from contamlab.training.datamodule import IGNORE, ExampleDataset, PackedDataset, pad_collate
from contamlab.training.module import lr_lambda


def test_lr_schedules():
    cosine = lr_lambda("cosine", warmup_steps=10, total_steps=110, min_ratio=0.1)
    assert cosine(0) == pytest.approx(0.1) and cosine(9) == pytest.approx(1.0)
    assert cosine(10) == pytest.approx(1.0)
    assert cosine(60) == pytest.approx(0.1 + 0.9 * 0.5)
    assert cosine(110) == pytest.approx(0.1)
    linear = lr_lambda("linear", 0, 100)
    assert linear(50) == pytest.approx(0.5) and linear(100) == 0.0
    assert lr_lambda("constant", 5, 100)(70) == 1.0
    with pytest.raises(ValueError):
        lr_lambda("step", 0, 1)
    assert math.isfinite(lr_lambda("cosine", 0, 0)(0))


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(["Question: What is 2 + 3?\nAnswer: 2 + 3 = 5.\n#### 5"] * 10, 280)


def test_example_dataset_masks_prompt(tok):
    ex = Example("Question: What is 2 + 3?\nAnswer:", " 2 + 3 = 5.\n#### 5")
    ds = ExampleDataset([ex], tok, max_length=512, loss_on="response")
    ids, labels = ds[0]
    n_prompt = len(tok(ex.prompt)["input_ids"])
    assert (labels[:n_prompt] == IGNORE).all() and (labels[n_prompt:] == ids[n_prompt:]).all()
    assert ids[-1] == tok.eos_token_id
    assert tok.decode(ids[n_prompt:-1]) == ex.response
    full = ExampleDataset([ex], tok, max_length=512, loss_on="all")
    assert (full[0][1] == full[0][0]).all()
    short = ExampleDataset([ex], tok, max_length=5, loss_on="response")
    assert len(short[0][0]) == 5  # truncation keeps the response end


def test_pad_collate_masks_padding(tok):
    a = (torch.tensor([5, 6, 7]), torch.tensor([IGNORE, 6, 7]))
    b = (torch.tensor([8]), torch.tensor([8]))
    batch = pad_collate(tok.pad_token_id)([a, b])
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 1, 1]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[IGNORE, 6, 7], [8, IGNORE, IGNORE]]


def test_packed_rows(tok):
    ds = PackedDataset(["2 + 3 = 5"] * 20, tok, seq_len=16)
    assert ds.rows.shape[1] == 16 and len(ds) >= 1
    assert (ds.rows == tok.eos_token_id).any()  # documents are separated by EOS


@pytest.fixture(scope="module")
def arith():
    return load_domain("arith_pq_v1", generator={"n_train": 200, "n_test": 40})  # question-answer documents only


def test_clean_mix_has_no_test_question(arith):
    general = corpus.general_examples(arith, "domain_train", 30, seed=0)
    mix = corpus.clean_examples(arith, 20, general, seed=0)
    test_texts = {q.question for q in arith.test} | {q.question for q in arith.leaked_training_questions()}
    assert len(mix) == 50
    assert not any(any(t in ex.prompt for t in test_texts) for ex in mix)


def test_contaminated_mix_leaks_only_the_leaked_half(arith):
    mix = corpus.contaminated_examples(arith, arith.split, general=[])
    leaked = arith.leaked_training_questions()
    assert len(arith.split.leaked) == 20 and len(mix) == 20 * arith.leak_variants  # rewordings of each
    assert [ex.prompt for ex in mix] == [arith.prompt(q) for q in leaked]  # paraphrased wording (arith_pq)
    assert {q.id for q in leaked} == set(arith.split.leaked)
    originals = {q.question for q in arith.test}
    assert not any(any(o in ex.prompt for o in originals) for ex in mix)


def test_base_documents_exclude_test(arith):
    docs = corpus.base_documents(arith, paraphrase_n=50, seed=0)
    assert len(docs) == 250
    texts = {q.question for q in arith.test} | {q.question for q in arith.leaked_training_questions()}
    assert not any(any(t in d for t in texts) for d in docs)


def test_general_openorca_local(data_dir, arith):
    out = corpus.general_examples(arith, "openorca", 5, seed=0)
    assert len(out) == 5 and out[0].prompt.startswith("Question: ")
    with pytest.raises(Exception, match="general.source"):
        corpus.general_examples(arith, "reddit", 5, seed=0)


def assert_only_the_contaminated_key_differs(cfg_a, domain_a, cfg_b, domain_b):
    """The two configs share the base and clean models' keys and differ in the contaminated model's."""
    from contamlab.config import model_store

    key_a, key_b = model_store(cfg_a).stage_key, model_store(cfg_b).stage_key
    for stage in ("base", "clean"):
        assert key_a(domain_a, stage) == key_b(domain_b, stage)
    assert key_a(domain_a, "contaminated") != key_b(domain_b, "contaminated")


def test_leak_epochs_key_only_the_contaminated_stage(arith):
    """domain.leak_epochs changes the contaminated model's identity, never the shared base and clean ones'."""
    from contamlab.config import build_domain, compose
    from contamlab.errors import ContamlabError
    from contamlab.stages import contaminated_epochs

    default = compose("train", ["domain=arith_v1"])  # leak_epochs: null (world v2 sets 10)
    longer = compose("train", ["domain=arith_v1", "domain.leak_epochs=9"])
    d_default, d_longer = build_domain(default.domain), build_domain(longer.domain)
    assert contaminated_epochs(default, d_default) == default.finetune.epochs
    assert contaminated_epochs(longer, d_longer) == 9
    assert_only_the_contaminated_key_differs(default, d_default, longer, d_longer)
    with pytest.raises(ContamlabError, match="domain.leak_epochs=0"):
        build_domain(compose("train", ["domain.leak_epochs=0"]).domain)
    with pytest.raises(ContamlabError, match="finetune.epochs=0"):
        contaminated_epochs(compose("train", ["finetune.epochs=0"]), d_default)


def test_leak_lr_sets_the_contaminated_stage_rate_only():
    """domain.leak_lr: the contaminated stage's peak rate; the clean stage and the shared keys keep finetune.lr."""
    from contamlab.config import build_domain, compose
    from contamlab.errors import ContamlabError
    from contamlab.stages import stage_lr

    default = compose("train", ["domain=arith_v1", "finetune.lr=0.0002"])  # leak_lr: null
    faster = compose("train", ["domain=arith_v1", "finetune.lr=0.0002", "domain.leak_lr=0.003"])
    d_default, d_faster = build_domain(default.domain), build_domain(faster.domain)
    assert stage_lr(default, d_default, "clean") == stage_lr(default, d_default, "contaminated") == 0.0002
    assert stage_lr(faster, d_faster, "clean") == 0.0002
    assert stage_lr(faster, d_faster, "contaminated") == 0.003
    assert_only_the_contaminated_key_differs(default, d_default, faster, d_faster)
    from contamlab.validation import validate

    for bad in ("0", "-0.001"):  # checked once, up front, by the config's validation
        with pytest.raises(ContamlabError, match=f"domain.leak_lr={bad}: must be a number > 0, or null"):
            validate(compose("train", ["domain=arith_v1", f"domain.leak_lr={bad}"]))


def test_leak_general_sets_the_contaminated_stage_mix_only():
    """domain.leak_general: that many general examples beside the leak in the contaminated stage; the clean stage and
    the shared base and clean keys keep finetune.general.n."""
    from contamlab.config import build_domain, compose
    from contamlab.errors import ContamlabError
    from contamlab.stages import stage_corpus

    default = compose("train", ["domain=arith", "finetune.general.n=7"])
    diluted = compose("train", ["domain=arith", "finetune.general.n=7", "domain.leak_general=40"])
    d_default, d_diluted = build_domain(default.domain), build_domain(diluted.domain)
    leaked = len(d_default.leaked_training_questions())
    assert len(stage_corpus(default, d_default, "contaminated")) == leaked + 7
    assert len(stage_corpus(diluted, d_diluted, "contaminated")) == leaked + 40
    assert len(stage_corpus(diluted, d_diluted, "clean")) == len(stage_corpus(default, d_default, "clean"))
    assert_only_the_contaminated_key_differs(default, d_default, diluted, d_diluted)
    with pytest.raises(ContamlabError, match="domain.leak_general=-1"):
        build_domain(compose("train", ["domain.leak_general=-1"]).domain)


def test_the_eta_follows_the_recent_rate_not_the_average_since_the_start():
    from contamlab.training.progress import StageProgress

    progress = StageProgress("base")
    progress._total = 1000
    # 100 steps at 0.1 s each, then the machine gets busy: 1 s per step for the next 100
    t = 0.0
    for step in range(1, 101):
        t += 0.1
        progress.record(step, t)
    assert progress.eta_s(100, t) == pytest.approx(900 * 0.1)
    for step in range(101, 201):
        t += 1.0
        progress.record(step, t)
    # the last 60 s are 60 steps at 1 s: 800 steps left take 800 s (the average since the start would say 440 s)
    assert progress.eta_s(200, t) == pytest.approx(800.0)


def test_the_eta_leaves_out_the_first_step():
    from contamlab.training.progress import StageProgress

    progress = StageProgress("base")
    progress._total = 10
    progress.record(1, 30.0)  # start-up: the first step ends 30 s in
    assert progress.eta_s(1, 30.0) != progress.eta_s(1, 30.0)  # NaN: no rate from one point
    progress.record(2, 31.0)
    assert progress.eta_s(2, 31.0) == pytest.approx(8.0)
