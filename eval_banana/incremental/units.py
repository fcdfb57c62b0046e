"""The validate stage's units as the incremental selection reads them: each by its own id, and
a case through its row, for `--changed-since` (its family expanded again at REF)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.incremental.changed import CaseRows

if TYPE_CHECKING:
    from eval_banana.checks.definition import FrozenScript
    from eval_banana.checks.loading import Loaded
    from eval_banana.checks.units import Unit
    from eval_banana.datasets.globwalk import FollowedLink
    from eval_banana.models.stages import ConfigDoc


def incremental_view(unit: Unit) -> tuple[str, dict[str, Any]]:
    """(check file, definition) as --changed-since / --last-failed read them: a case by its own
    id (its dataset files are told apart, by `case_rows`)."""
    return unit.item.path, {**unit.definition, "id": unit.check_id}


def case_rows(
    *, units: list[Unit], config: ConfigDoc, frozen: Mapping[str, FrozenScript | None]
) -> list[CaseRows | None]:
    """Beside each unit, for --changed-since: a case's dataset files and digest, read through
    its row (its family expanded again from the files as they were at REF, once per family)."""
    pasts: dict[str, Callable[[Mapping[str, bytes]], Mapping[str, str] | None]] = {}
    sources: dict[str, DatasetSource] = {}
    found: list[CaseRows | None] = []
    for unit in units:
        if unit.case is None or not unit.family_files:
            found.append(None)
            continue
        item = unit.item
        if item.path not in pasts:
            script = frozen.get(item.path)
            pasts[item.path] = _past_expansion(
                item=item, config=config, script=script.data if script is not None else None
            )
            sources[item.path] = _dataset_source(item=item, config=config)
        source = sources[item.path]
        found.append(
            CaseRows(
                family=item.path,
                files=tuple(unit.family_files),
                digest=unit.case.digest,
                past=pasts[item.path],
                scope=source.scope,
                names=source.names,
                links=source.links,
                looks_into=source.looks_into,
            )
        )
    return found


class DatasetSource(NamedTuple):
    """Where a family's `cases_from` looks, which paths it names (a removed one too), the links
    to folders it looks through, and whether it looks into a folder (a removed link's)."""

    scope: str | None  # its folder ("" the whole project), or its file; None without one
    names: Callable[[str], bool]
    links: Callable[[], Sequence[FollowedLink]]
    looks_into: Callable[[str], bool]


def _dataset_source(*, item: Loaded, config: ConfigDoc) -> DatasetSource:
    pattern = item.definition.get("cases_from")
    if not isinstance(pattern, str):
        return DatasetSource(
            scope=None, names=lambda path: False, links=tuple, looks_into=lambda path: False
        )
    from eval_banana.datasets.globwalk import (
        dataset_scope,
        dataset_skipped,
        followed_links,
        is_glob,
        looks_into,
        names_path,
    )

    root = Path(config.project_root)
    skipped = dataset_skipped(config=config)

    @functools.cache
    def links() -> Sequence[FollowedLink]:
        # A second walk of the glob's folders, made only under --changed-since, once a family.
        if not is_glob(pattern):
            return ()
        return followed_links(pattern=pattern, root=root, skipped=skipped)

    return DatasetSource(
        scope=dataset_scope(pattern),
        names=lambda path: names_path(pattern=pattern, path=path, root=root, skipped=skipped),
        links=links,
        looks_into=lambda path: looks_into(pattern=pattern, path=path, root=root, skipped=skipped),
    )


def _past_expansion(
    *, item: Loaded, config: ConfigDoc, script: bytes | None
) -> Callable[[Mapping[str, bytes]], Mapping[str, str] | None]:
    """The family's case digests from its dataset files' contents at another revision."""
    from eval_banana.datasets.revisiondigests import case_digests_from
    from eval_banana.datasets.sources import CaseLimit

    return functools.partial(
        case_digests_from,
        definition=item.definition,
        check_file=item.path,
        max_cases=CaseLimit.of(config=config),
        script=script,
    )
