"""A child process held to 1 GB of address space: a runaway allocation fails there with
MemoryError, instead of growing the test runner until the kernel kills it."""

from __future__ import annotations

import resource

LIMIT_BYTES = 1 << 30


def limit_address_space() -> None:
    """`preexec_fn` for subprocess: runs in the child before it starts."""
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))
