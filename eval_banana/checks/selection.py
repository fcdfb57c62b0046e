"""Which checks a run selects: `-k` and `--tag` expressions and `--check-id` globs.

The expression language is pytest's `-k` grammar:

    expression := [ or_expr ]
    or_expr    := and_expr ( "or" and_expr )*
    and_expr   := not_expr ( "and" not_expr )*
    not_expr   := "not" not_expr | "(" or_expr ")" | name
    name       := characters other than whitespace, parentheses and quotes,
                  or a quoted string ('...' or "...") holding any characters but its quote

`not` binds tightest, then `and`, then `or`; the three are keywords only in lower case, as in
pytest. What a name means is the caller's choice: for `-k` it is a case-insensitive substring
of the check id, for `--tag` one exact tag. Stdlib only: `eb list` and `eb run` import it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, NamedTuple

from eval_banana.core.caseid import split_case_check_id
from eval_banana.core.errors import DefinitionError, NoChecksError, SelectionError

if TYPE_CHECKING:
    from eval_banana.core.globset import GlobSet

Matcher = Callable[[str], bool]
Predicate = Callable[[Matcher], bool]

KEYWORDS = ("and", "or", "not")
GLOB_CHARACTERS = "*?["
# Deeper nesting than this is refused, so a hostile expression cannot exhaust the stack.
MAX_DEPTH = 100
_SPECIAL = "()'\""
_HINT = (
    "Combine names with and, or, not and parentheses, e.g. 'judge and not slow'; "
    "quote a name that holds spaces, parentheses or a keyword: '\"needs review\"'."
)


class Token(NamedTuple):
    kind: str  # "(", ")", "and", "or", "not", "name", "end"
    text: str
    column: int  # 0-based offset into the expression


class Expression(NamedTuple):
    """A parsed expression; `matches(match)` asks `match(name)` for each name it needs."""

    text: str
    predicate: Predicate
    names: tuple[str, ...]

    def matches(self, match: Matcher) -> bool:
        return self.predicate(match)


def _error(*, option: str, text: str, column: int, problem: str) -> SelectionError:
    """`Invalid <option> expression ...: <problem> at column N`, the text and a caret below it."""
    pointer = " " * column + "^"
    return SelectionError(
        f"Invalid {option} expression {text!r}: {problem} at column {column + 1}\n"
        f"  {text}\n  {pointer}",
        field_path=option.lstrip("-"),
        hint=_HINT,
    )


def tokenize(*, text: str, option: str) -> list[Token]:
    """The tokens of `text`, ending with an `end` token; raise SelectionError on a bad quote."""
    tokens: list[Token] = []
    position = 0
    length = len(text)
    while position < length:
        char = text[position]
        if char.isspace():
            position += 1
        elif char in "()":
            tokens.append(Token(kind=char, text=char, column=position))
            position += 1
        elif char in "'\"":
            close = text.find(char, position + 1)
            if close < 0:
                raise _error(
                    option=option, text=text, column=position, problem="unterminated quote"
                )
            tokens.append(Token(kind="name", text=text[position + 1 : close], column=position))
            position = close + 1
        else:
            start = position
            while position < length and not (
                text[position].isspace() or text[position] in _SPECIAL
            ):
                position += 1
            word = text[start:position]
            tokens.append(Token(kind=word if word in KEYWORDS else "name", text=word, column=start))
    tokens.append(Token(kind="end", text="", column=length))
    return tokens


def _shown(token: Token) -> str:
    if token.kind == "end":
        return "the end of the expression"
    return repr(token.text) if token.kind != "name" else f"name {token.text!r}"


class _Parser:
    """Recursive descent over the token list, building one closure per node."""

    def __init__(self, *, text: str, option: str) -> None:
        self.text = text
        self.option = option
        self.tokens = tokenize(text=text, option=option)
        self.position = 0
        self.names: list[str] = []

    def peek(self) -> Token:
        return self.tokens[self.position]

    def take(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def fail(self, *, token: Token, expected: str) -> SelectionError:
        return _error(
            option=self.option,
            text=self.text,
            column=token.column,
            problem=f"expected {expected}, found {_shown(token)}",
        )

    def parse(self) -> Predicate:
        predicate = self.or_expr(depth=0)
        token = self.peek()
        if token.kind == ")":
            raise _error(
                option=self.option, text=self.text, column=token.column, problem="unmatched ')'"
            )
        if token.kind != "end":
            raise self.fail(token=token, expected="'and', 'or' or the end of the expression")
        return predicate

    def or_expr(self, *, depth: int) -> Predicate:
        parts = [self.and_expr(depth=depth)]
        while self.peek().kind == "or":
            self.take()
            parts.append(self.and_expr(depth=depth))
        if len(parts) == 1:
            return parts[0]
        return lambda match: any(part(match) for part in parts)

    def and_expr(self, *, depth: int) -> Predicate:
        parts = [self.not_expr(depth=depth)]
        while self.peek().kind == "and":
            self.take()
            parts.append(self.not_expr(depth=depth))
        if len(parts) == 1:
            return parts[0]
        return lambda match: all(part(match) for part in parts)

    def not_expr(self, *, depth: int) -> Predicate:
        token = self.take()
        if depth > MAX_DEPTH:
            raise _error(
                option=self.option,
                text=self.text,
                column=token.column,
                problem=f"nested deeper than {MAX_DEPTH} levels",
            )
        if token.kind == "not":
            inner = self.not_expr(depth=depth + 1)
            return lambda match: not inner(match)
        if token.kind == "(":
            inner = self.or_expr(depth=depth + 1)
            closing = self.take()
            if closing.kind != ")":
                opened = f"')' to close the '(' at column {token.column + 1}"
                raise self.fail(token=closing, expected=opened)
            return inner
        if token.kind == "name":
            name = token.text
            self.names.append(name)
            return lambda match: match(name)
        raise self.fail(token=token, expected="a name, 'not' or '('")


def parse_expression(*, text: str, option: str) -> Expression:
    """Parse one expression; `option` (`-k`, `--tag`) names it in errors. Blank is an error."""
    if not text.strip():
        raise _error(option=option, text=text, column=0, problem="the expression is empty")
    parser = _Parser(text=text, option=option)
    predicate = parser.parse()
    return Expression(text=text, predicate=predicate, names=tuple(parser.names))


def keyword_matches(*, expression: Expression, check_id: str) -> bool:
    """`-k`: each name is a case-insensitive substring of the id (as pytest matches names)."""
    lowered = check_id.lower()
    return expression.matches(lambda name: name.lower() in lowered)


def tags_match(*, expression: Expression, tags: Sequence[str]) -> bool:
    """`--tag`: each name is one exact, case-sensitive tag."""
    present = frozenset(tags)
    return expression.matches(present.__contains__)


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


class Selector(NamedTuple):
    """The compiled `-k` and `--tag` filters of one selection (`--check-id` loads, see validate)."""

    keyword: Expression | None
    tags: tuple[Expression, ...]

    def selects(self, *, check_id: str, tags: Sequence[str]) -> bool:
        """Both filters hold: `-k` matches the id and any one `--tag` expression the tags."""
        if self.keyword is not None and not keyword_matches(
            expression=self.keyword, check_id=check_id
        ):
            return False
        return not self.tags or any(
            tags_match(expression=expression, tags=tags) for expression in self.tags
        )


def compile_selector(*, keyword: str | None, tags: Sequence[str]) -> Selector:
    """Parse `-k` (empty means no filter, as in pytest) and each `--tag` (empty is an error)."""
    keyword_expression = None
    if keyword is not None and keyword.strip():
        keyword_expression = parse_expression(text=keyword, option="-k")
    return Selector(
        keyword=keyword_expression,
        tags=tuple(parse_expression(text=tag, option="--tag") for tag in tags),
    )


def selected_nothing(error: DefinitionError) -> bool:
    """Whether a validation failure only says the selection holds no check (an empty project,
    a `-k`/`--tag` that matches nothing, a `--check-id` that names no check): such a run can
    start nothing, so it leaves no run folder behind."""
    if isinstance(error, NoChecksError):
        return True
    return error.field_path == "check_id" and all(
        problem.field_path == "check_id" for problem in error.problems
    )
