"""The harness tests' rig (stand-in agents first on PATH, a fresh project), for transcripts."""

from __future__ import annotations

from tests.harness.conftest import rig

__all__ = ["rig"]
