"""How the parts of a run's cache session warn: into the session's warnings, each message once."""

from __future__ import annotations

from typing import Protocol


class Warn(Protocol):
    """A warning of the run's cache (`hint` None: the check ran again, as on a miss)."""

    def __call__(self, *, message: str, file: str | None = None, hint: str | None = None) -> None:
        """Add the warning, unless its message was already said."""
