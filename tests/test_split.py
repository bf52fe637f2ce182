import pytest

from contamlab.data.split import Split, draw_split
from contamlab.errors import ContamlabError


def test_gsm8k_sizes_and_determinism():
    ids = [f"q{i}" for i in range(1319)]
    a, b = draw_split(ids, seed=0), draw_split(ids, seed=0)
    assert (len(a.leaked), len(a.unleaked)) == (660, 659)
    assert a == b
    assert draw_split(ids, seed=1).leaked != a.leaked
    assert set(a.leaked).isdisjoint(a.unleaked) and set(a.leaked) | set(a.unleaked) == set(ids)
    # test-set order is kept inside each half
    assert list(a.leaked) == sorted(a.leaked, key=ids.index)


def test_save_load_roundtrip(tmp_path):
    split = draw_split(["a", "b", "c", "d"], seed=3)
    split.save(tmp_path / "split.json")
    assert Split.load(tmp_path / "split.json") == split
    assert split.is_leaked(split.leaked[0]) and not split.is_leaked(split.unleaked[0])


def test_bad_inputs(tmp_path):
    with pytest.raises(ContamlabError, match="leak_fraction"):
        draw_split(["a", "b"], seed=0, leak_fraction=1.0)
    with pytest.raises(ContamlabError, match="duplicate"):
        draw_split(["a", "a"], seed=0)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ContamlabError, match="bad.json"):
        Split.load(tmp_path / "bad.json")
