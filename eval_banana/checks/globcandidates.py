"""Which parsed check files each of many `--check-id` globs may load, found in one pass over the
files: every file's id is matched against all the globs at once (core/globset), and the
families a glob may match cases of are looked up by its literal start. Trying each glob on each
file cost globs x files: 2,000 globs over 2,000 files took two seconds."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from eval_banana.checks.idselectors import may_match_cases_of, pattern_prefix
from eval_banana.checks.loading import Holder
from eval_banana.datasets.keys import is_family


class GlobCandidates:
    """`globs` (stripped) over `holders` (in path order), matched once."""

    def __init__(self, *, globs: Sequence[str], holders: Sequence[Holder]) -> None:
        # Loaded with the first glob: a selection of ids alone is spared it.
        from eval_banana.core.globset import GlobSet

        self._holders = holders
        unique = list(dict.fromkeys(globs))
        self._position = {glob: position for position, glob in enumerate(unique)}
        self._matched: list[list[int]] = [[] for _ in unique]  # a glob's files, by index
        matcher = GlobSet(unique)
        for index, holder in enumerate(holders):
            for position in matcher.matching(holder.check_id):
                self._matched[position].append(index)
        family_ids = sorted(
            (holder.check_id, index)
            for index, holder in enumerate(holders)
            if is_family(holder.document)
        )
        self._family_ids = [family for family, _ in family_ids]
        self._family_index = [index for _, index in family_ids]

    def of(self, glob: str) -> list[tuple[Holder, bool]]:
        """The files (in path order) whose id `glob` matches, and the families whose case ids
        it may match (`may_match_cases_of`): the only files it can load; each with whether
        `glob` matches its id. `glob` is one of those given."""
        matched = self._matched[self._position[glob]]
        start = pattern_prefix(glob)
        near = [
            index
            for index in self._families_near(start)
            if may_match_cases_of(start=start, family=self._holders[index].check_id)
        ]
        chosen = frozenset(matched)
        return [(self._holders[index], index in chosen) for index in sorted({*matched, *near})]

    def _families_near(self, start: str) -> list[int]:
        """The families whose id starts with the literal start `start`: as it stops before any
        `[`, only their `<family>[` can begin with it, and it can run past none."""
        found: list[int] = []
        at = bisect_left(self._family_ids, start)
        while at < len(self._family_ids) and self._family_ids[at].startswith(start):
            found.append(self._family_index[at])
            at += 1
        return found
