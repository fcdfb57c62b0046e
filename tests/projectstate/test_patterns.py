"""The glob rules of `inputs:`: what each pattern matches, and which patterns are refused."""

from __future__ import annotations

import pytest

from eval_banana.projectstate.patterns import InputPatterns, normalize, pattern_problem

PATHS = sorted(
    [
        "README.md",
        ".hidden",
        "docs/guide.md",
        "docs/img/logo.png",
        "src/app.py",
        "src/lib/util.py",
        "src/lib/deep/x.py",
        "src/lib/gen/out.py",
        "srcx/a.py",
        "src",  # a file whose name is a prefix of a folder's
        "a b/[x].py",
    ]
)


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (["src/*.py"], ["src/app.py"]),  # `*` stays within one folder
        (
            ["src/**/*.py"],
            ["src/app.py", "src/lib/deep/x.py", "src/lib/gen/out.py", "src/lib/util.py"],
        ),
        (["src/**"], ["src/app.py", "src/lib/deep/x.py", "src/lib/gen/out.py", "src/lib/util.py"]),
        (
            ["src"],
            ["src", "src/app.py", "src/lib/deep/x.py", "src/lib/gen/out.py", "src/lib/util.py"],
        ),
        (["docs"], ["docs/guide.md", "docs/img/logo.png"]),  # a folder means what is inside
        (["docs/"], ["docs/guide.md", "docs/img/logo.png"]),
        (["./docs//img"], ["docs/img/logo.png"]),
        (["*.md"], ["README.md"]),  # relative to the root: not at any depth
        (["**/*.md"], ["README.md", "docs/guide.md"]),
        (["*"], PATHS),  # names starting with a dot match too
        (["src/lib/**", "!src/lib/gen/**"], ["src/lib/deep/x.py", "src/lib/util.py"]),
        (["!src/lib/gen/**", "src/lib/**"], ["src/lib/deep/x.py", "src/lib/util.py"]),  # order-free
        (
            ["**/*.py", "!**/gen"],
            ["a b/[x].py", "src/app.py", "src/lib/deep/x.py", "src/lib/util.py", "srcx/a.py"],
        ),
        (["src/???.py"], ["src/app.py"]),
        (["src/[a-c]*.py"], ["src/app.py"]),
        (["src/[!a]*.py"], []),
        (["a b/[[]x].py"], ["a b/[x].py"]),  # a set holding `[` matches the bracket itself
        (["docs/img/logo.png"], ["docs/img/logo.png"]),
        (["nothing/**"], []),
        ([], []),
    ],
)
def test_what_patterns_match(patterns: list[str], expected: list[str]) -> None:
    compiled = InputPatterns(patterns)
    assert compiled.select(PATHS) == sorted(expected)
    assert [path for path in PATHS if compiled.matches(path)] == compiled.select(PATHS)


def test_prefixes_are_the_literal_folders_a_pattern_lives_in() -> None:
    assert InputPatterns(["src/lib/*.py", "docs", "!src/x"]).prefixes == ["docs", "src/lib"]
    assert InputPatterns(["src/**", "*.md"]).prefixes is None
    assert InputPatterns(["a/b*/c"]).prefixes == ["a"]


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("", "non-empty"),
        ("   ", "non-empty"),
        ("!", "non-empty"),
        ("/etc/passwd", "escapes the project root"),
        ("!/x", "escapes the project root"),
        ("../sibling/**", "escapes the project root"),
        ("src/../../x", "escapes the project root"),
        ("src/../b", "escapes the project root"),
        ("C:/x", "escapes the project root"),
        ("src\\app.py", "backslash"),
        (".", "below the project root"),
        ("./", "below the project root"),
        ("[z-a]", "not a valid glob"),
        ("a\x00b", "NUL"),
        (1, "must be a string"),
        (None, "must be a string"),
    ],
)
def test_refused_patterns_say_why(pattern: object, problem: str) -> None:
    found = pattern_problem(pattern)
    assert found is not None and problem in found


@pytest.mark.parametrize(
    "pattern", ["src/**", "!src/gen", "**", "*.md", "a b/c", ".hidden", "x..y"]
)
def test_usable_patterns(pattern: str) -> None:
    assert pattern_problem(pattern) is None


def test_normalize() -> None:
    assert normalize("./src//lib/") == "src/lib"
    assert normalize("!./a//b") == "!a/b"


def test_outermost_drops_prefixes_inside_others() -> None:
    from eval_banana.projectstate.patterns import outermost

    assert outermost(["src/lib", "src", "docs", "srcx", "src/lib/a.py", "docs"]) == [
        "docs",
        "src",
        "srcx",
    ]


@pytest.mark.parametrize(
    ("patterns", "reached"),
    [
        (["vendor/lib/lib.py"], ["vendor/lib"]),
        (["vendor/l?b/x/*.py"], ["vendor/lib"]),
        (["**/*.py"], ["other/sub", "vendor/lib"]),
        (["vendor"], ["vendor/lib"]),
        (["vendor/*.py"], []),
        (["src/**"], []),
        (["vendor/**", "!vendor/lib/**"], []),
        (["vendor/**", "!vendor/*"], []),
        (["vendor/**", "!vendor/lib"], []),
        # Some files of it left out: its commit still counts for the others.
        (["vendor/**", "!vendor/lib/tests/**"], ["vendor/lib"]),
    ],
)
def test_a_submodule_is_matched_by_patterns_naming_files_inside_it(
    patterns: list[str], reached: list[str]
) -> None:
    compiled = InputPatterns(patterns)
    assert compiled.reaching_into(["vendor/lib", "other/sub"]) == reached
    paths = ["other/sub", "vendor/lib", "vendor/x.py"]
    selected = compiled.select(paths, submodules=["other/sub", "vendor/lib"])
    assert [path for path in selected if path != "vendor/x.py"] == reached
