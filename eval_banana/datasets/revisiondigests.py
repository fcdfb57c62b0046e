"""A family's case digests over its dataset files as they were at another git revision."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_banana.datasets.expand import expand_family
from eval_banana.datasets.globwalk import Skipped
from eval_banana.datasets.sources import CaseLimit


def case_digests_from(
    contents: Mapping[str, bytes],
    *,
    definition: dict[str, Any],
    check_file: str,
    max_cases: CaseLimit,
    script: bytes | None,
) -> dict[str, str] | None:
    """A family's cases (check id -> definition digest) had its dataset files held `contents`
    (root-relative name -> bytes), as at another git revision: laid out in a folder of their
    own and expanded as the project's are. None when they do not make a valid family."""
    import tempfile  # only --changed-since over a family pays for it

    with tempfile.TemporaryDirectory(prefix="eb-dataset-") as folder:
        for name, data in contents.items():
            path = Path(folder, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        expansion = expand_family(
            definition=definition,
            check_file=check_file,
            project_root=Path(folder),
            max_cases=max_cases,
            script=script,
            skipped=Skipped(names=frozenset(), folders=frozenset()),
        )
    if expansion.problems:
        return None
    return {case.check_id: case.digest for case in expansion.cases}
