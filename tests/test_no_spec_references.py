"""No tracked file cites the numbered points of a specification the repository does not hold.

Reasons are written in words, or point at docs/compatibility.md where eval-banana 0.5.0's exact
behaviour is the reason; a bare point number or a private file name tells a reader nothing.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Point numbers (a B or D, a hyphen, digits), the improvement marker in square brackets, and
# the names of the private specification files.
_FORBIDDEN = re.compile(
    r"\b[BD]-[0-9]+|\[improve\]|\bbehaviou?r\.md\b|\bdecisions\.md\b|\bpipeline\.md\b"
    r"|/work/s[h]ared/"  # spelled so that this line does not match itself
)


def forbidden_references(*, text: str) -> list[tuple[int, str]]:
    """Each offending line as (line number, matched text)."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found.extend((number, match.group(0)) for match in _FORBIDDEN.finditer(line))
    return found


def _tracked_text_files() -> list[Path]:
    listing = subprocess.run(
        ["git", "ls-files", "-z"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )
    paths = [REPO / name for name in listing.stdout.decode().split("\0") if name]
    return [path for path in paths if path.is_file() and not path.is_symlink()]


def _text_of(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _point(letter: str, number: int) -> str:
    # Built at run time, so this file does not cite a point itself.
    return f"{letter}-{number}"


def test_the_scanner_catches_every_spelling() -> None:
    md = ".md"
    text = "\n".join(
        [
            "fine: W7, sha256:ab12, noqa: B018, A-1, C-7, docs/agents.md",
            f"a point ({_point('B', 97)})",
            f"a range {_point('B', 57)}..{_point('B', 71)}",
            f"per {_point('D', 7)}",
            "the [" + "improve] marker",
            f"see behaviour{md}",
            f"see behavior{md}",
            f"see decisions{md}",
            f"see pipeline{md}",
            "docs: /work/" + "shared/sp" + "ec/agents.md",
        ]
    )
    found = forbidden_references(text=text)
    assert [number for number, _ in found] == [2, 3, 3, 4, 5, 6, 7, 8, 9, 10]
    assert found[1:3] == [(3, _point("B", 57)), (3, _point("B", 71))]


def test_no_tracked_file_cites_the_specification() -> None:
    files = _tracked_text_files()
    assert len(files) > 100, "git ls-files listed too few files to be this repository"
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {match}"
        for path in files
        if (text := _text_of(path)) is not None
        for number, match in forbidden_references(text=text)
    ]
    assert offenders == [], "write the reason in words instead:\n" + "\n".join(offenders)


def test_every_compatibility_pointer_resolves_to_a_section() -> None:
    page = (REPO / "docs" / "compatibility.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', page))
    pointer = re.compile(r"compatibility\.md#([a-z0-9-]+)")
    pointers = [
        (path.relative_to(REPO), number, match.group(1))
        for path in _tracked_text_files()
        if (text := _text_of(path)) is not None
        for number, line in enumerate(text.splitlines(), start=1)
        for match in pointer.finditer(line)
    ]
    assert len(pointers) >= 10, "the code points at docs/compatibility.md sections"
    dangling = [
        f"{path}:{number}: #{name}" for path, number, name in pointers if name not in anchors
    ]
    assert dangling == [], "no such anchor in docs/compatibility.md:\n" + "\n".join(dangling)
