import pytest

from contamlab.data.prompts import WEI_2022_GSM8K_EXEMPLARS, PromptFormat, solution_to_cot
from contamlab.data.question import Question
from contamlab.errors import ContamlabError


def test_eight_shot_prefix():
    fmt = PromptFormat()
    prefix = fmt.prefix()
    assert prefix.count("Q: ") == 8 and prefix.count("\nA: ") == 8
    assert prefix.startswith("Q: There are 15 trees in the grove.")
    assert prefix.endswith("The answer is 8.\n\n")
    prompt = fmt.prompt("How many?")
    assert prompt == prefix + "Q: How many?\nA:"


@pytest.mark.parametrize("k", [0, 1, 4, 8])
def test_k_shot(k):
    prefix = PromptFormat(n_shot=k).prefix()
    assert prefix.count("Q: ") == k
    if k:
        assert prefix.startswith(f"Q: {WEI_2022_GSM8K_EXEMPLARS[0][0]}")


def test_bad_k():
    with pytest.raises(ContamlabError, match="n_shot"):
        PromptFormat(n_shot=9)
    with pytest.raises(ContamlabError, match="solution_style"):
        PromptFormat(solution_style="latex")


def test_cot_target_strips_annotations():
    solution = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18"
    assert solution_to_cot(solution, "18") == (
        "Janet sells 16 - 3 - 4 = 9 duck eggs a day. She makes 9 * 2 = $18. The answer is 18."
    )
    q = Question("x", "q?", solution, "18")
    assert PromptFormat().target(q).startswith(" Janet sells")
    assert PromptFormat(solution_style="gsm8k").target(q) == " " + solution


def test_truncate_at_stop():
    fmt = PromptFormat()
    assert fmt.truncate(" 3 + 2 = 5. The answer is 5.\n\nQ: next") == " 3 + 2 = 5. The answer is 5."
