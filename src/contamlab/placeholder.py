"""Stand-in target for configured components whose implementation belongs to a later issue.

A config that points here composes (so grids and ``--cfg job`` work) but fails loudly when built: never a silent
success.
"""

from __future__ import annotations

from typing import Any

from contamlab.errors import NotImplementedYetError


def not_implemented(component: str, lands_with: str, **params: Any) -> None:
    """Raise a clear "not implemented yet" error for ``component`` (e.g. ``strategy=railcap``)."""
    raise NotImplementedYetError(
        f"{component} is not implemented yet (it lands with {lands_with}); its parameters are recorded: {params}"
    )
