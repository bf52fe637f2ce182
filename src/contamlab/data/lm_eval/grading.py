"""Judging one response as the harness does: cut at the task's stop strings, filtered, scored by its metric."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from contamlab.data.lm_eval.compat import filter_ensembles, templates_compiled_once
from contamlab.errors import ContamlabError

__all__ = ["choose", "filter_names", "grade"]


def choose(what: str, value: str | None, options: Sequence[str], task_name: str) -> str:
    """``value`` if the task has it, the task's first option if ``value`` is None.

    Args:
        what: ``filter`` or ``metric`` (the ``domain.<what>`` key, for the message).
        value: The option asked for, or None.
        options: The task's options, its default first.
        task_name: The task's name, for the messages.

    Raises:
        ContamlabError: The task has no such option, or none at all.
    """
    if not options:
        raise ContamlabError(f"lm-eval task {task_name} has no {what}")
    if value is None:
        return options[0]
    if value not in options:
        raise ContamlabError(f"domain.{what}={value}: lm-eval task {task_name} has {', '.join(options)}")
    return value


def filter_names(task: Any) -> list[str]:
    """The names of the task's filter ensembles, in the task's order (``strict-match``, ``flexible-extract`` …)."""
    return [f.name for f in filter_ensembles(task)]


def grade(
    task: Any,
    task_name: str,
    doc: dict,
    response: str,
    until: Sequence[str],
    filter_name: str,
    metric_name: str,
    qid: str,
) -> tuple[Any, bool]:
    """The task's answer in a response to ``doc`` and whether the task's metric counts it correct.

    The response is cut at ``until`` (``postprocess_generated_text``, as lm-eval's models do), passed through the
    filter ensemble ``filter_name`` (``apply`` on an :class:`~lm_eval.api.instance.Instance`) and judged by
    ``task.process_results`` with the filtered answer.

    Args:
        task: A generate_until ``ConfigurableTask``.
        task_name: Its name (the instance's metadata, and the messages).
        doc: The task's document the response answers.
        response: A generated response.
        until: The task's stop strings.
        filter_name: One of the task's filter ensembles (:func:`filter_names`).
        metric_name: One of the task's metrics.
        qid: The item's id, for the message.

    Returns:
        ``(extracted answer, correct)``.

    Raises:
        ContamlabError: A metric that gives other values than 0 and 1.
    """
    from lm_eval.api.instance import Instance
    from lm_eval.models.utils import postprocess_generated_text

    ensemble = next(f for f in filter_ensembles(task) if f.name == filter_name)
    gen_kwargs = dict(task.config.generation_kwargs)
    instance = Instance("generate_until", doc, ("", gen_kwargs), 0, (task_name, 0, 1))
    instance.resps = [postprocess_generated_text(response, list(until), None)]
    ensemble.apply([instance])
    extracted = instance.filtered_resps[filter_name]
    with templates_compiled_once():
        value = task.process_results(doc, [extracted]).get(metric_name)
    if isinstance(value, numbers.Real) and value in (0, 1):  # bools and numpy floats too
        return extracted, bool(value)
    raise ContamlabError(
        f"domain.metric={metric_name}: lm-eval task {task_name} gives {value!r}, not 0 or 1, for "
        f"{qid}; choose a metric that says right or wrong"
    )
