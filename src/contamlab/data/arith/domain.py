"""The synthetic arithmetic domains of the offline world: ``arith``, its paraphrase twin ``arith_pq``, and ``arith_mc``.

All render the same generated problems (:mod:`~contamlab.data.arith.generator`); ``arith_pq`` differs only in the
wording in which the leaked questions reach the contaminated model, mirroring GSM8K → PQ; ``arith_mc`` asks them as
multiple-choice questions.
"""

from __future__ import annotations

import random
from functools import cached_property
from typing import Any

from contamlab.data.arith.cot import COT_VERSION, render_cot
from contamlab.data.arith.generator import ArithConfig, generate
from contamlab.data.arith.problem import ArithProblem
from contamlab.data.arith.render import RENDER_VERSION, render, reworded
from contamlab.data.arith.web import web_documents
from contamlab.data.checkers import LETTERS, ChoiceChecker, with_options
from contamlab.data.domain import Domain, ShiftSides
from contamlab.data.question import Question
from contamlab.data.split import Split
from contamlab.errors import ContamlabError

#: How the leaked items reach the contaminated model (``domain.leak_style``) -> the leak's key in results
#: (:attr:`ArithDomain.leak_wording`; its name in words: :data:`contamlab.data.domain.LEAK_NAMES`).
LEAK_FORMS = {"base": "verbatim", "pq": "paraphrased", "reworded": "reworded"}
#: The cot rendering of a fully reworded leak's solution: a variant that neither training (1..cot_variants), the test
#: reference (0) nor BenBench's references (1001..1064) use.
REWORDED_SOLUTION_VARIANT = 2001
#: The generator streams derived from one generator seed (:meth:`ArithDomain.fresh_problems`): a seed's streams are
#: ``seed * STREAM_STRIDE + 1000 + role``, so that the streams of two generator seeds never meet.
STREAM_STRIDE = 100_000
#: The sham stage's stream (the audit's non-members use 100, its pool 200, ReCaLL's prefixes 0, 1, ...).
SHAM_STREAM = 300
#: The shift null's streams (:meth:`ArithDomain.shift_sides`): draw ``d`` uses ``SHIFT_STREAM + 3 * d + side``.
SHIFT_STREAM = 1000
#: The ``source`` shift's number range: the generator's largest operands times this (capped at 100).
SOURCE_NUMBER_SCALE = 3


def _question(problem: ArithProblem, style: str) -> Question:
    text, solution = render(problem, style)
    return Question(problem.uid, text, solution, str(problem.answer))


class ArithDomain(Domain):
    """Synthetic GSM8K-format word problems, deterministic from ``generator.seed``.

    Args:
        generator: Fields of :class:`~contamlab.data.arith.generator.ArithConfig` (sizes, seed, difficulty).
        leak_style: Rendering of the leaked items in training data (:data:`LEAK_FORMS`): ``base`` (verbatim), ``pq``
            (the question reworded, the solution verbatim, as GSM8K-PQ) or ``reworded`` (both reworded).
        leak_variants: ``pq`` only: distinct paraphrases of each leaked question in the contaminated stage's data
            (each a fresh draw of the pq templates). GSM8K-PQ has one per question; a ~1M-parameter model learns a
            single rewording's wording rather than its problem, so the offline twin leaks several.
        solutions: ``terse`` (world v1: one templated line per step) or ``cot`` (world v2: chain-of-thought
            renderings with slack, :mod:`~contamlab.data.arith.cot`; each test item has one fixed rendering, training
            items draw among ``cot_variants``).
        cot_variants: Renderings a training problem draws among (``cot`` only).
        web_forms: Pre-train on the web's forms of such text (worksheets of bare questions, solutions alone, pages
            of several items) besides question-answer documents (:func:`~contamlab.data.arith.web.web_documents`).
        slips: Share of pretraining solutions with one slipped word (:func:`~contamlab.data.arith.web.slip`;
            ``web_forms`` only).
    """

    def __init__(
        self,
        generator: dict[str, Any] | None = None,
        leak_style: str = "base",
        leak_variants: int = 1,
        solutions: str = "terse",
        cot_variants: int = 8,
        web_forms: bool = False,
        slips: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if solutions not in ("terse", "cot"):
            raise ContamlabError(f"domain.solutions={solutions!r}: use terse or cot")
        if int(cot_variants) < 1:
            raise ContamlabError(f"domain.cot_variants={cot_variants}: must be >= 1")
        self.solutions, self.cot_variants, self.web_forms = solutions, int(cot_variants), bool(web_forms)
        if not 0.0 <= float(slips) <= 1.0 or (float(slips) > 0 and not self.web_forms):
            raise ContamlabError(f"domain.slips={slips}: a share in [0, 1], and only with domain.web_forms=true")
        self.slips = float(slips)
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in (generator or {}).items()}
        try:
            self.generator = ArithConfig(**fields)
        except (TypeError, ValueError) as err:
            raise ContamlabError(f"domain.generator: {err}") from None
        if leak_style not in LEAK_FORMS:
            raise ContamlabError(f"domain.leak_style={leak_style!r}: use one of {', '.join(LEAK_FORMS)}")
        if leak_style == "reworded" and solutions != "cot":
            raise ContamlabError(
                "domain.leak_style=reworded: needs domain.solutions=cot (a terse solution has one wording)"
            )
        self.leak_style = leak_style
        if int(leak_variants) < 1 or (leak_style == "base" and int(leak_variants) != 1):
            raise ContamlabError(
                f"domain.leak_variants={leak_variants}: must be >= 1, and 1 for a verbatim leak (leak_style=base; "
                "domain.leak_repeats repeats it)"
            )
        self.leak_variants = int(leak_variants)

    @cached_property
    def problems(self) -> tuple[list[ArithProblem], list[ArithProblem]]:
        """The generated (train, test) problems."""
        return generate(self.generator)

    def _train_variant(self, problem: ArithProblem, salt: int = 0) -> int:
        # A seeded draw among the training renderings 1..cot_variants (0 is reserved for test references).
        return 1 + random.Random(f"{problem.uid}/train/{salt}").randrange(self.cot_variants)

    def _solution(self, problem: ArithProblem, variant: int) -> str:
        # A training item's solution, whichever wording its question has: a cot rendering does not restate the
        # question, and a terse solution is always the original one (a paraphrased question keeps it, as in PQ).
        if self.solutions == "cot":
            return render_cot(problem, variant)[1]
        return render(problem, "base")[1]

    def _load_train(self) -> list[Question]:
        if self.solutions == "terse":
            return [_question(p, "base") for p in self.problems[0]]
        return [
            Question(p.uid, render(p, "base")[0], self._solution(p, self._train_variant(p)), str(p.answer))
            for p in self.problems[0]
        ]

    def _train_size(self) -> int:
        # One training item a generated problem: the fingerprint's count without rendering thousands of solutions
        # (seconds, paid by every job that names a model); an empty split still raises, through `train`.
        return len(self.problems[0][: self.max_train]) or len(self.train)

    def _test_item(self, problem: ArithProblem, qid: str | None = None) -> Question:
        # A benchmark item as the test set renders it: base wording, the fixed reference solution (cot variant 0).
        text, terse = render(problem, "base")
        solution = terse if self.solutions == "terse" else self._solution(problem, 0)
        return Question(qid or problem.uid, text, solution, str(problem.answer))

    def _load_test(self) -> list[Question]:
        return [self._test_item(p) for p in self.problems[1]]

    def _load_leak_texts(self, test: list[Question]) -> list[Question]:
        if self.leak_style == "base":
            return test
        # pq, like GSM8K -> PQ: only the question is reworded; reworded: its solution too.
        return self._reworded(test, 0)

    def _reworded(
        self, questions: list[Question], variant: int, problems: list[ArithProblem] | None = None
    ) -> list[Question]:
        by_id = {p.uid: p for p in (problems if problems is not None else self.problems[1])}
        out = []
        for q in questions:
            problem = by_id[q.id]
            solution = q.solution
            if self.leak_style == "reworded":
                solution = self._solution(problem, REWORDED_SOLUTION_VARIANT + variant)
            out.append(Question(q.id, render(reworded(problem, variant), "pq")[0], solution, q.answer))
        return out

    def leaked_training_questions(self, split: Split | None = None) -> list[Question]:
        """The leaked questions as the contaminated model trains on them: ``leak_variants`` paraphrases each (pq)."""
        leaked = super().leaked_training_questions(split)
        return leaked + [q for v in range(1, self.leak_variants) for q in self._reworded(leaked, v)]

    def reference_versions(self, questions: list[Question], n: int = 3) -> list[list[Question]]:
        """BenBench's paraphrased references: ``n`` full rewrites (question and solution) of each question.

        Each is a fresh draw of the pq templates (variants 1001, 1002, ...), rendered in the pq style throughout, as
        BenBench's three GPT rewrites of each GSM8K item. A draw whose question is a text the contaminated model
        trained on (arith_pq's leaked rewordings) or repeats an earlier draw is skipped, within 64 draws: a short
        problem has few templates. Works on both splits.
        """
        by_id = {p.uid: p for p in (*self.problems[0], *self.problems[1])}
        leaked = {q.question for q in self.leaked_training_questions()} if self.leak_style != "base" else set()
        versions: list[list[Question]] = [[] for _ in range(n)]
        for q in questions:
            drawn: list[tuple[str, str]] = []
            spare: list[tuple[str, str]] = []
            for v in range(1001, 1065):
                text, solution = render(reworded(by_id[q.id], v), "pq")
                if self.solutions == "cot":
                    # A cot rendering draws its own wording of every step, whichever wording the question has.
                    solution = self._solution(by_id[q.id], v)
                fresh = text not in leaked and all(text != t for t, _ in drawn)
                (drawn if fresh else spare).append((text, solution))
                if len(drawn) == n:
                    break
            drawn += spare[: n - len(drawn)]
            for version, (text, solution) in zip(versions, drawn):
                version.append(Question(q.id, text, solution, q.answer))
        return versions

    @property
    def leak_wording(self) -> str:
        """The leak form's key in results (:data:`LEAK_FORMS`; in words, :data:`~contamlab.data.domain.LEAK_NAMES`)."""
        return LEAK_FORMS[self.leak_style]

    @property
    def generated(self) -> bool:
        """The problems are rendered here from a seeded generator."""
        return True

    def fresh_problems(self, n: int, stream: int, number_scale: int = 1) -> list[ArithProblem]:
        """``n`` problems of the generator in neither the train nor the test split, from a stream of their own.

        They come from the test stream of generator seed ``generator.seed * STREAM_STRIDE + 1000 + stream``
        (:data:`STREAM_STRIDE`: two generator seeds never share a stream); a draw whose question text equals a train
        or test problem's is skipped. ``number_scale`` multiplies the largest operand of each
        level (capped at 100): another number range of the same templates.
        """
        from dataclasses import replace

        train, test = self.problems
        own = {render(p, "base")[0] for p in (*train, *test)}
        seed = self.generator.seed * STREAM_STRIDE + 1000 + int(stream)
        num_max = tuple(min(100, x * number_scale) for x in self.generator.num_max)
        config = replace(self.generator, seed=seed, n_train=0, n_test=n + 20 + n // 10, num_max=num_max)
        return [p for p in generate(config)[1] if render(p, "base")[0] not in own][:n]

    def nonmember_questions(self, n: int, seed: int = 1) -> list[Question]:
        """``n`` problems no model of this world trained on (:meth:`fresh_problems`, stream ``seed``).

        Rendered as the test items are (base wording; in world v2 the test items' chain-of-thought rendering, so that
        only membership tells the two apart). The audit's non-members, its pool and ReCaLL's prefixes.
        """
        return [self._test_item(p, f"nonmember-{i:03d}") for i, p in enumerate(self.fresh_problems(n, seed))]

    def shift_sides(self, n: int, draw: int) -> ShiftSides:
        """One null audit's items (:data:`~contamlab.data.domain.SHIFTS`), from streams no stage trains on.

        The benchmark side and the ``none`` non-members are fresh problems rendered as test items; ``style`` rewords
        each benchmark item's question (pq templates) and keeps its solution; ``source`` draws problems at
        :data:`SOURCE_NUMBER_SCALE` times the number range. A problem whose question is a sham item's, or repeats
        another side's, is skipped: no model of the world trained on any of them.
        """
        base = SHIFT_STREAM + 3 * int(draw)
        taken = {q.question for q in self.sham_training_questions()}
        sides = []
        for k, scale in enumerate((1, 1, SOURCE_NUMBER_SCALE)):
            problems = []
            for p in self.fresh_problems(n + 20, base + k, scale):
                text = render(p, "base")[0]
                if text not in taken and len(problems) < n:
                    taken.add(text)
                    problems.append(p)
            sides.append(problems)
        members = [self._test_item(p, f"d{draw}-b{i:03d}") for i, p in enumerate(sides[0])]
        by_id = {q.id: p for q, p in zip(members, sides[0])}
        style = [
            Question(f"d{draw}-s{q.id[len(f'd{draw}-b') :]}", render(reworded(by_id[q.id], 1), "pq")[0], q.solution,
                     q.answer)
            for q in members
        ]  # fmt: skip
        return ShiftSides(
            members,
            {
                "none": [self._test_item(p, f"d{draw}-n{i:03d}") for i, p in enumerate(sides[1])],
                "style": style,
                "source": [self._test_item(p, f"d{draw}-x{i:03d}") for i, p in enumerate(sides[2])],
            },
        )

    def sham_training_questions(self) -> list[Question]:
        """The sham stage's items: as many fresh problems as the leak (:data:`SHAM_STREAM`), in the leak's form.

        A verbatim leak's sham items are rendered as test items; a reworded leak's are reworded the same way. The
        stream is another than the non-members', the pool's and ReCaLL's, so the sham model saw none of them either.
        """
        n = len(self.split.leaked)
        problems = self.fresh_problems(n, SHAM_STREAM)
        items = [self._test_item(p) for p in problems]
        forms = [self._reworded(items, 0, problems)] if self.leak_style != "base" else [items]
        forms += [self._reworded(items, v, problems) for v in range(1, self.leak_variants)]
        # ids of their own, so that no sham item shares an id (or a text) with a benchmark item
        return [Question(f"sham-{q.id}", q.question, q.solution, q.answer) for form in forms for q in form]

    def paraphrased_train(self) -> list[Question]:
        """Training problems with the question in the paraphrase wording and the original solution (as in PQ)."""
        return [
            Question(p.uid, render(p, "pq")[0], self._solution(p, self._train_variant(p)), str(p.answer))
            for p in self.problems[0][: self.max_train]
        ]

    def web_documents(self, questions: list[Question], seed: int) -> list[str] | None:
        """World v2's pretraining documents from training ``questions`` (None unless ``web_forms``).

        Each problem is rendered once more with another of its training variants (so pretraining and the clean
        fine-tune see different renderings), then laid out in the web's forms.
        """
        if not self.web_forms:
            return None
        by_id = {p.uid: p for p in self.problems[0]}
        items = []
        for q in questions:
            problem = by_id[q.id]
            solution = self._solution(problem, self._train_variant(problem, salt=1))
            items.append((q.question, self.format.target(Question(q.id, q.question, solution, q.answer)).strip()))
        fmt = self.format
        return web_documents(items, seed, fmt.question_prefix, fmt.answer_prefix, self.slips)

    def fingerprint(self) -> dict[str, Any]:
        """Domain fingerprint plus the generator settings."""
        return {
            **super().fingerprint(),
            "generator": self.generator.__dict__,
            "render_version": RENDER_VERSION,
            "leak_style": self.leak_style,
            **({"leak_variants": self.leak_variants} if self.leak_variants != 1 else {}),
            # World v2's knobs enter the key only away from v1's defaults, so v1 models keep their keys.
            **(
                {"solutions": self.solutions, "cot_variants": self.cot_variants, "cot_version": COT_VERSION}
                if self.solutions != "terse"
                else {}
            ),
            **({"web_forms": True} if self.web_forms else {}),
            **({"slips": self.slips} if self.slips else {}),
        }


class ArithMCDomain(ArithDomain):
    """The synthetic problems as a multiple-choice benchmark (``arith_mc``), the offline test bed of the choice checker.

    Each question lists ``n_choices`` options: its answer and wrong answers drawn, seeded by the question's id, from
    the slips a solver makes (off by one or two, by ten, an operand, the result of an earlier step). The reference
    solution keeps its steps and ends "The answer is (C)."; responses are judged by the choice checker. Every rendering
    of a question (paraphrases, BenBench's references) keeps its options and their order.

    Args:
        n_choices: Options per question (2 to 26).
        **kwargs: :class:`ArithDomain`'s arguments (``web_forms`` is not supported).
    """

    checker = ChoiceChecker()

    def __init__(self, n_choices: int = 4, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 2 <= int(n_choices) <= 26:
            raise ContamlabError(f"domain.n_choices={n_choices}: must be between 2 and 26")
        if self.web_forms:
            raise ContamlabError("domain=arith_mc: web_forms is not supported for the multiple-choice rendering")
        self.n_choices = int(n_choices)

    def _options(self, uid: str, answer: int, numbers: list[int]) -> tuple[tuple[str, ...], str]:
        """The options (as text) and the gold letter of a problem with ``answer``, from ``numbers`` it involves."""
        rng = random.Random(f"{uid}/choices")
        near = [answer + d for d in (1, -1, 2, -2, 10, -10, 3, -3)] + numbers
        pool = sorted({n for n in near if n >= 0 and n != answer})
        rng.shuffle(pool)
        wrong = pool[: self.n_choices - 1]
        extra = answer + 4
        while len(wrong) < self.n_choices - 1:  # a problem with too few plausible slips: further neighbours
            if extra not in wrong and extra != answer:
                wrong.append(extra)
            extra += 1
        options = [answer, *wrong]
        rng.shuffle(options)
        return tuple(str(o) for o in options), LETTERS[options.index(answer)]

    def _mc(self, q: Question) -> Question:
        """The multiple-choice form of a numeric question (its id, steps and wording kept)."""
        if q.choices:
            return q
        problem = self._by_id.get(q.id)
        numbers = [] if problem is None else [n for s in problem.steps for n in (s.a, s.b, s.result)]
        choices, letter = self._options(q.id, int(q.answer), numbers)
        return Question(q.id, with_options(q.question, choices), self._mc_solution(q.solution, letter), letter, choices)

    @staticmethod
    def _mc_solution(solution: str, letter: str) -> str:
        steps = solution.split("####")[0].rstrip()
        return f"{steps}\nThe answer is ({letter})." if steps else f"The answer is ({letter})."

    @cached_property
    def _by_id(self) -> dict[str, ArithProblem]:
        return {p.uid: p for p in (*self.problems[0], *self.problems[1])}

    def _load_train(self) -> list[Question]:
        return [self._mc(q) for q in super()._load_train()]

    def _load_test(self) -> list[Question]:
        return [self._mc(q) for q in super()._load_test()]

    def _reworded(self, questions: list[Question], variant: int) -> list[Question]:
        out = super()._reworded(questions, variant)  # the reworded text, the MC solution and letter kept
        return [
            Question(r.id, with_options(r.question, q.choices), r.solution, r.answer, q.choices)
            for r, q in zip(out, questions)
        ]

    def reference_versions(self, questions: list[Question], n: int = 3) -> list[list[Question]]:
        """BenBench's references (:meth:`ArithDomain.reference_versions`) with each question's options."""
        by_id = {q.id: q for q in questions}
        return [
            [
                Question(
                    r.id,
                    with_options(r.question, by_id[r.id].choices),
                    self._mc_solution(r.solution, r.answer),
                    r.answer,
                    by_id[r.id].choices,
                )
                for r in version
            ]
            for version in super().reference_versions(questions, n)
        ]

    def nonmember_questions(self, n: int, seed: int = 1) -> list[Question]:
        """Unseen problems (:meth:`ArithDomain.nonmember_questions`), as multiple-choice questions."""
        return [self._mc(q) for q in super().nonmember_questions(n, seed)]

    def shift_sides(self, n: int, draw: int) -> None:
        """None: the shift null reads free-text items (its style rewording has no multiple-choice form)."""
        return None

    def paraphrased_train(self) -> list[Question]:
        """Training problems in the paraphrase wording (:meth:`ArithDomain.paraphrased_train`), with options."""
        train = {q.id: q for q in self.train}
        return [
            Question(
                p.id,
                with_options(p.question, train[p.id].choices),
                train[p.id].solution,
                train[p.id].answer,
                train[p.id].choices,
            )
            for p in super().paraphrased_train()
            if p.id in train
        ]

    def fingerprint(self) -> dict[str, Any]:
        """:meth:`ArithDomain.fingerprint` plus the options per question."""
        return {**super().fingerprint(), "n_choices": self.n_choices}
