r"""An lm-evaluation-harness task as a domain: its items, few-shot prompts, targets and answer filter, from lm-eval.

``domain=lm_eval domain.task=<name>`` reads a task of the installed ``lm-eval`` (``pip install 'contamlab[lm-eval]'``)
and follows the harness's own protocol (``lm_eval.evaluator.simple_evaluate`` of lm-eval 0.4.13) with lm-eval's
objects, not a copy of them:

- the task is its YAML loaded as ``TaskManager`` loads it, with the task's dataset replaced by local files when
  ``domain.data_files`` names them (or a known local copy exists: GSM8K's under ``CONTAMLAB_DATA_DIR``);
- the prompts are the contexts of ``task.build_all_requests()`` after ``num_fewshot`` is set as ``--num_fewshot``
  sets it and the few-shot sampler is seeded as ``--seed`` seeds it (1234 by default);
- a response is cut at the task's ``until`` strings (``postprocess_generated_text``), passed through one of the
  task's filter ensembles (``strict-match``, ``flexible-extract`` …) and judged by ``task.process_results``: correct
  when the task's metric (``exact_match`` …) gives 1.

An item's text is the task's rendering of it (``doc_to_text``) split into a constant frame and the item's own field
when every document renders that way (GSM8K-CoT: ``Q: `` + the question + ``\nA:``), so that the question reads as
the benchmark's question and the frame becomes the prompt format; otherwise the whole rendering is the question.
The training target is the text a few-shot example puts after it (target delimiter + ``doc_to_target``).

``generate_until`` tasks serve every job. ``multiple_choice`` tasks serve detection and the audit: an item is the
question with its options (``A. …``), its solution the correct option, its answer that option's letter. The harness
scores them by the log-likelihood of each option, not by a generated answer, so they have no solve probability:
a prompt or a check of a response stops with a one-line error (an audit runs with ``audit.mitigate=[]``).

The package, one concern a module:

- :mod:`~contamlab.data.lm_eval.compat`: every use of lm-eval's internals (its YAML loader and task index order,
  the task's filter ensembles, a few-shot example's rendering, the Jinja environment's patch, the version);
  nothing else in contamlab touches them;
- :mod:`~contamlab.data.lm_eval.tasks`: the task's YAML found as lm-eval's index finds it, and the checks that
  contamlab can read the task;
- :mod:`~contamlab.data.lm_eval.local_data`: local copies of the task's dataset;
- :mod:`~contamlab.data.lm_eval.grading`: a response judged by the task's filter and metric;
- :mod:`~contamlab.data.lm_eval.domain`: the domain adapter, :class:`LmEvalDomain`.
"""

from contamlab.data.lm_eval.domain import LmEvalDomain
from contamlab.data.lm_eval.local_data import LOCAL_COPIES
from contamlab.data.lm_eval.tasks import task_yaml

__all__ = ["LOCAL_COPIES", "LmEvalDomain", "task_yaml"]
