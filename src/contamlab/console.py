"""The console of a job: which libraries may draw progress bars and log lines beside contamlab's own."""

from __future__ import annotations

import logging

_bars_disabled = False  # whether library_output turned transformers' bars off (so that a later job may turn them on)


def library_output(progress: bool) -> None:
    """Keep the libraries' console output to what the job asked for (``progress``).

    transformers draws a bar for every model it loads ("Loading weights", 3-5 a job) and saves ("Writing model
    shards", one a training stage) whatever the job's ``progress``; they show only when it is true. An
    ``HF_HUB_DISABLE_PROGRESS_BARS`` of the user's is kept: bars turned off here are the only ones turned on again, by
    a later job of the same process (a multirun) that asks for progress. matplotlib's INFO records ("generated new
    fontManager", once a machine) are not the job's news: Hydra's logging config would print them.
    """
    global _bars_disabled
    import sys

    from huggingface_hub import utils as hub_utils

    # huggingface_hub's switch, not transformers': transformers reads it when it is imported, and importing it here
    # would cost a cached audit rerun a second for nothing. Once it is imported, its own switch is the one it reads.
    transformers = sys.modules.get("transformers.utils.logging")
    if not progress and not hub_utils.are_progress_bars_disabled():
        hub_utils.disable_progress_bars()
        if transformers is not None:
            transformers.disable_progress_bar()
        _bars_disabled = True
    elif progress and _bars_disabled:
        hub_utils.enable_progress_bars()
        if transformers is not None:
            transformers.enable_progress_bar()
        _bars_disabled = False
    # Nor are rouge-score's absl INFO records ("Using default tokenizer", once a BenBench run).
    for name in ("matplotlib", "absl"):
        logging.getLogger(name).setLevel(logging.WARNING)
