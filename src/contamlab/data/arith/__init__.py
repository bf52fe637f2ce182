"""The arithmetic world: synthetic GSM8K-format word problems, their wordings and solutions, and their domains.

- :mod:`~contamlab.data.arith.problem`: the record of one problem (steps, answer, stored template choices);
- :mod:`~contamlab.data.arith.words`: the names, objects, items and containers the problems are made of;
- :mod:`~contamlab.data.arith.generator`: the seeded generator (:class:`ArithConfig`, :func:`generate`);
- :mod:`~contamlab.data.arith.templates` and :mod:`~contamlab.data.arith.render`: the ``base`` and ``pq`` wordings,
  with world v1's terse solutions;
- :mod:`~contamlab.data.arith.cot`: world v2's chain-of-thought solutions;
- :mod:`~contamlab.data.arith.web`: world v2's web forms of the pretraining text;
- :mod:`~contamlab.data.arith.domain`: the ``arith``, ``arith_pq`` and ``arith_mc`` domains built on them.
"""

from contamlab.data.arith.cot import COT_VERSION, render_cot
from contamlab.data.arith.domain import ArithDomain, ArithMCDomain
from contamlab.data.arith.generator import ArithConfig, generate
from contamlab.data.arith.problem import ArithProblem, Step
from contamlab.data.arith.render import RENDER_VERSION, render, reworded
from contamlab.data.arith.web import slip, web_documents

__all__ = [
    "COT_VERSION",
    "RENDER_VERSION",
    "ArithConfig",
    "ArithDomain",
    "ArithMCDomain",
    "ArithProblem",
    "Step",
    "generate",
    "render",
    "render_cot",
    "reworded",
    "slip",
    "web_documents",
]
