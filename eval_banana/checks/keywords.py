"""Which checks a run selects by `-k` and `--tag`: the expression language both are written in.

The language is pytest's `-k` grammar:

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

from collections.abc import Callable, Sequence
from typing import NamedTuple

from eval_banana.core.errors import SelectionError

Matcher = Callable[[str], bool]
Predicate = Callable[[Matcher], bool]

KEYWORDS = ("and", "or", "not")
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
