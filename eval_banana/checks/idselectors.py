"""Which checks a run selects by `--check-id`: its values as ids, globs of ids and
`<family>[<case glob>]` selectors, matched against check and case ids. Stdlib only until the
first glob is matched (core/globset is loaded then): `eb list` and `eb run` import it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from eval_banana.core.caseid import split_case_check_id

if TYPE_CHECKING:
    from eval_banana.core.globset import GlobSet

GLOB_CHARACTERS = "*?["


def is_id_pattern(text: str) -> bool:
    """A `--check-id` value with glob characters; ids themselves can never contain them."""
    return any(char in text for char in GLOB_CHARACTERS)


def pattern_prefix(pattern: str) -> str:
    """The literal start of a glob (before its first wildcard): every match contains it."""
    cut = min((pattern.find(char) for char in GLOB_CHARACTERS if char in pattern), default=-1)
    return pattern if cut < 0 else pattern[:cut]


def id_matches_pattern(*, check_id: str, pattern: str) -> bool:
    """Shell-style, case-sensitive: ids are case-sensitive everywhere else too."""
    return fnmatchcase(check_id, pattern)


def may_match_cases_of(*, start: str, family: str) -> bool:
    """Whether a glob whose literal start is `start` can match a case id of `family` (each one
    starts `<family>[`): a glob that cannot never costs the family an expansion or a match."""
    opening = family + "["
    return opening.startswith(start) or start.startswith(opening)


def split_case_selector(text: str) -> tuple[str, str] | None:
    """(family id, case glob) of a `--check-id` value written `<family>[<case glob>]`; None
    for any other value."""
    text = text.strip()
    if "[" not in text or not text.endswith("]"):
        return None
    cut = text.index("[")
    return text[:cut], text[cut + 1 : -1]


# `<family>[<case glob>]` with a family part that holds no glob character and one pair of brackets.
_PLAIN_CASE_SELECTOR = re.compile(r"([^*?\[\]]+)\[[^\[\]]*\]")


def plainly_named_family(text: str) -> str | None:
    """The family id a `<family>[<case glob>]` value names outright (no glob character in its
    family part, no bracket in its case part), else None. Such a value is a case selector: as
    a glob it may still match a plain check's id (`judge_[ab]` picks `judge_a`), but its
    brackets never stand for the last character of another family's id: `qa_judg[refund-1]`
    is `qa_judge[refund-1]` misspelt (told with a did-you-mean), not all of `qa_judge`."""
    matched = _PLAIN_CASE_SELECTOR.fullmatch(text.strip())
    return matched.group(1) if matched else None


def case_part_matches(*, asked: str, case_ids: Collection[str]) -> bool:
    """Whether the case part `asked` of a `<family>[<case glob>]` value names or matches one of
    the family's `case_ids`."""
    if asked in case_ids:
        return True
    return is_id_pattern(asked) and any(fnmatchcase(case_id, asked) for case_id in case_ids)


def globs_matching_any(*, globs: Sequence[str], texts: Iterable[str]) -> set[str]:
    """The `globs` that match at least one of `texts`, found in one pass over the texts."""
    from eval_banana.core.globset import GlobSet

    unique = list(dict.fromkeys(globs))
    matcher = GlobSet(unique)
    found: set[str] = set()
    for text in texts:
        found.update(unique[position] for position in matcher.matching(text))
        if len(found) == len(unique):
            break
    return found


class IdSelectors:
    """`--check-id` values, read once for choosing among many checks (`eb run`, `eb stage
    execute`, `eb history`): a plain check is chosen by its id or a glob matching it; a case
    also by a `<family>[<case glob>]` value of its family, its family's id, or a glob matching
    either id. A thousand ids or globs asked of a 10,000-case family cost a lookup and one
    match per case, not a thousand matches (ids kept in dicts, the globs matched together in
    one pass, core/globset)."""

    def __init__(self, selectors: Sequence[str]) -> None:
        self.texts = tuple(dict.fromkeys(selector.strip() for selector in selectors))
        self._position = {text: position for position, text in enumerate(self.texts)}
        # family -> its case ids written whole, and its case globs (each with its position)
        self._case_ids: dict[str, dict[str, int]] = {}
        self._case_globs: dict[str, list[tuple[str, int]]] = {}
        self._case_glob_sets: dict[str, GlobSet] = {}
        # The id globs by position: every one (a plain check's id may match any), and those
        # that may choose a case, each with the family its `<family>[...]` value names or None.
        # A value that names its family outright is not among the latter: its case glob alone
        # decides, and it chooses no other family's case nor any family whole.
        self._globs: list[int] = []
        self._case_reaching: list[tuple[int, str | None]] = []
        self._glob_sets: dict[bool, GlobSet] = {}  # of cases -> its globs, compiled on first use
        self._family_globs: dict[str, list[int]] = {}  # family -> the id globs matching it
        for position, text in enumerate(self.texts):
            written = split_case_selector(text)
            if written is not None:
                family, asked = written
                if is_id_pattern(asked):
                    self._case_globs.setdefault(family, []).append((asked, position))
                else:
                    self._case_ids.setdefault(family, {})[asked] = position
            if is_id_pattern(text):
                self._globs.append(position)
                if plainly_named_family(text) is None:
                    named = written[0] if written is not None else None
                    self._case_reaching.append((position, named))

    def selects(self, check_id: str) -> bool:
        """Whether these values choose `check_id` (a plain check's or a case's)."""
        return next(self._choosers(check_id), None) is not None

    def choosing(self, check_id: str) -> list[str]:
        """The values (stripped, in the order given, each once) each of which alone chooses
        `check_id`: which globs chose something, found in one pass over the checks."""
        return [self.texts[position] for position in sorted(set(self._choosers(check_id)))]

    def _choosers(self, check_id: str) -> Iterator[int]:
        """The positions of the values that choose `check_id`, cheapest first, each kind
        looked for only when asked for more (`selects` stops at the first)."""
        whole = self._position.get(check_id)
        if whole is not None:
            yield whole
        parts = split_case_check_id(check_id)
        if parts is None:
            yield from self._id_globs_matching(text=check_id)
            return
        family, case_id = parts
        family_named = self._position.get(family)
        if family_named is not None:
            yield family_named
        case_named = self._case_ids.get(family, {}).get(case_id)
        if case_named is not None:
            yield case_named
        case_globs = self._case_globs.get(family)
        if case_globs:
            matching = self._case_glob_set(family).matching(case_id)
            yield from (case_globs[member][1] for member in matching)
        # Not the family's own `<family>[...]` values: their case glob decides.
        yield from self._globs_of_family(family)
        yield from self._id_globs_matching(text=check_id, unless_named=family)

    def _id_globs_matching(self, *, text: str, unless_named: str | None = None) -> Iterator[int]:
        """The positions of the id globs that match `text`; for a case (`unless_named`, its
        family), only those that may choose a case, but its family's own `<family>[...]`
        values."""
        if unless_named is None:
            if self._globs:
                yield from (self._globs[m] for m in self._glob_set(cases=False).matching(text))
            return
        if not self._case_reaching:
            return  # a thousand `<family>[<case>]` values match no case id as globs
        for member in self._glob_set(cases=True).matching(text):
            position, named = self._case_reaching[member]
            if named != unless_named:
                yield position

    def _glob_set(self, *, cases: bool) -> GlobSet:
        """The id globs that may choose a case (`cases`) or every id glob, compiled once."""
        found = self._glob_sets.get(cases)
        if found is None:
            # Loaded with the first glob: a selection of ids alone (or none) is spared it.
            from eval_banana.core.globset import GlobSet

            positions = [p for p, _ in self._case_reaching] if cases else self._globs
            found = self._glob_sets[cases] = GlobSet([self.texts[p] for p in positions])
        return found

    def _globs_of_family(self, family: str) -> list[int]:
        """The positions of the id globs that match `family`'s own id (worked out once for
        all its cases)."""
        found = self._family_globs.get(family)
        if found is None:
            found = self._family_globs[family] = list(
                self._id_globs_matching(text=family, unless_named=family)
            )
        return found

    def _case_glob_set(self, family: str) -> GlobSet:
        """The case globs of `family`'s own `<family>[...]` values, compiled on first use."""
        found = self._case_glob_sets.get(family)
        if found is None:
            from eval_banana.core.globset import GlobSet

            globs = [asked for asked, _ in self._case_globs[family]]
            found = self._case_glob_sets[family] = GlobSet(globs)
        return found
