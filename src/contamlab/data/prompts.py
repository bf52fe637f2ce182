"""Prompt formats: Wei et al. (2022) 8-shot chain-of-thought for GSM8K; zero-shot Question/Answer for arith.

"Zero Gap Is Not Restoration" §5.1 trains and evaluates with the 8-shot CoT prompt; the few-shot prefix is the same
for every question, so a sampler can compute its KV cache once per model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contamlab.data.question import Question
from contamlab.errors import ContamlabError

PROMPT_VERSION = 1  # bump when prompt rendering changes (part of every sample and locate cache key)

# The eight GSM8K exemplars of Wei et al. (2022), Table 20 ("Chain-of-thought prompting elicits reasoning").
WEI_2022_GSM8K_EXEMPLARS: tuple[tuple[str, str], ...] = (
    (
        "There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they are done, "
        "there will be 21 trees. How many trees did the grove workers plant today?",
        "There are 15 trees originally. Then there were 21 trees after some more were planted. So there must have "
        "been 21 - 15 = 6. The answer is 6.",
    ),
    (
        "If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?",
        "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5.",
    ),
    (
        "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left in total?",
        "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After eating 35, "
        "they had 74 - 35 = 39. The answer is 39.",
    ),
    (
        "Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many lollipops did "
        "Jason give to Denny?",
        "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 - 12 = 8. "
        "The answer is 8.",
    ),
    (
        "Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys does he have "
        "now?",
        "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. 5 + 4 = 9. "
        "The answer is 9.",
    ),
    (
        "There were nine computers in the server room. Five more computers were installed each day, from monday to "
        "thursday. How many computers are now in the server room?",
        "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = 20 computers "
        "were added. 9 + 20 is 29. The answer is 29.",
    ),
    (
        "Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How many golf "
        "balls did he have at the end of wednesday?",
        "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After losing 2 more, "
        "he had 35 - 2 = 33 golf balls. The answer is 33.",
    ),
    (
        "Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
        "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - 15 dollars "
        "left. 23 - 15 is 8. The answer is 8.",
    ),
)

_ANNOTATION = re.compile(r"<<[^<>]*>>")


def solution_to_cot(solution: str, answer: str) -> str:
    """Render a GSM8K reference solution as a one-paragraph CoT ending in "The answer is N." (Wei et al. style).

    The ``<<a*b=c>>`` calculator annotations are removed and the ``#### N`` line becomes the closing sentence.
    """
    body = solution.split("####")[0]
    body = _ANNOTATION.sub("", body)
    sentences = " ".join(line.strip() for line in body.splitlines() if line.strip())
    if sentences.endswith(f"answer is {answer}."):  # a solution that already closes with its answer (world v2)
        return sentences
    return f"{sentences} The answer is {answer}.".strip()


@dataclass(frozen=True)
class PromptFormat:
    """How questions and solutions are laid out for the model.

    Attributes:
        question_prefix: Text before each question (``"Q: "`` for GSM8K CoT, ``"Question: "`` for arith).
        answer_prefix: Text between the question and the response (ends the prompt; no trailing space, so
            the response starts with a space token as in the exemplars).
        separator: Text between two exemplars of a few-shot prompt.
        n_shot: Number of exemplars in the prefix (0 = zero-shot).
        solution_style: ``cot`` (annotations stripped, "The answer is N.") or ``gsm8k`` (the raw reference with
            ``<<…>>`` annotations and ``#### N``).
        stop: Strings that end a response (the next question marker); the tokenizer's EOS also stops.
        exemplars: The few-shot (question, response) pairs; None = the eight GSM8K exemplars of Wei et al. (2022).
    """

    question_prefix: str = "Q: "
    answer_prefix: str = "\nA:"
    separator: str = "\n\n"
    n_shot: int = 8
    solution_style: str = "cot"
    stop: tuple[str, ...] = ("\n\nQ:", "\nQ:")
    exemplars: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        if self.n_shot < 0 or self.n_shot > len(self.shots()):
            raise ContamlabError(f"domain.prompt.n_shot={self.n_shot}: must be between 0 and {len(self.shots())}")
        if self.solution_style not in ("cot", "gsm8k"):
            raise ContamlabError(f"domain.prompt.solution_style={self.solution_style!r}: use 'cot' or 'gsm8k'")

    def shots(self) -> tuple[tuple[str, str], ...]:
        """The exemplars the prefix draws from (``exemplars``, or Wei et al.'s eight)."""
        return WEI_2022_GSM8K_EXEMPLARS if self.exemplars is None else self.exemplars

    def key(self) -> dict:
        """What identifies the format in cache keys (the exemplars only when they are not Wei et al.'s)."""
        fields = dict(self.__dict__)
        if fields.get("exemplars") is None:
            fields.pop("exemplars", None)  # keys made before exemplars were configurable stay valid
        return fields

    def prefix(self) -> str:
        """The few-shot prefix shared by every prompt ('' when zero-shot)."""
        shots = self.shots()[: self.n_shot]
        return "".join(f"{self.question_prefix}{q}{self.answer_prefix} {a}{self.separator}" for q, a in shots)

    def question_block(self, question: str) -> str:
        """The question part that follows the shared prefix, ending where the model starts answering."""
        return f"{self.question_prefix}{question}{self.answer_prefix}"

    def prompt(self, question: str) -> str:
        """The full prompt: shared prefix + question block."""
        return self.prefix() + self.question_block(question)

    def target(self, q: Question) -> str:
        """The reference response the model is trained to produce (leading space included)."""
        if self.solution_style == "cot":
            return " " + solution_to_cot(q.solution, q.answer)
        return " " + q.solution.strip()

    def truncate(self, response: str) -> str:
        """Cut a generated response at the first stop string."""
        cut = len(response)
        for marker in self.stop:
            index = response.find(marker)
            if index >= 0:
                cut = min(cut, index)
        return response[:cut]
