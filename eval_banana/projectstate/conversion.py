"""The files git converts between the work tree and the index: line endings and filters.

git's index holds a file's clean content: what `core.autocrlf`, the `text`, `eol`, `ident`,
`working-tree-encoding` and `filter` attributes make of the work-tree bytes. A check reads the
work-tree bytes, so such a file is keyed on those, hashed like a modified file, never given
the index's id. Where nothing can convert (no attributes file anywhere, `core.autocrlf` unset:
nearly every repository) finding that out costs one `git config` and a few existence tests;
where the attributes files name no converting attribute (`linguist-*`, `diff=`, `binary`), one
read of each of those few files.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import NamedTuple

from eval_banana.projectstate import git

# core.filemode rides along (the one `git config` serves the listing too): git_state reads it.
_SETTINGS = r"^core\.(autocrlf|attributesfile|filemode)$"
# `crlf` is git's old name for `text` (`-crlf` for `-text`, `crlf=input` for `eol=lf`).
_ATTRIBUTES = ("text", "crlf", "eol", "filter", "ident", "working-tree-encoding")
# Any mention of one of them (a macro definition included) may convert: a wider match only
# costs the `git check-attr` that settles it.
_MENTIONS_CONVERSION = re.compile(
    rb"(text|crlf|eol|filter|ident|working-tree-encoding)", flags=re.IGNORECASE
)
# git's own attributes file for every repository of the machine (prefix /usr, /usr/local).
_SYSTEM_ATTRIBUTES = ("/etc/gitattributes", "/usr/local/etc/gitattributes")


def start_settings(*, repo: git.Repository) -> subprocess.Popen[bytes]:
    """Start reading the settings that decide whether git converts anything (and whether it
    reads a file's executable bit)."""
    return git.start(args=["config", "-z", "--get-regexp", _SETTINGS], cwd=repo.top)


def read_settings(process: subprocess.Popen[bytes]) -> dict[str, str]:
    """The settings `start_settings` read: lower-cased name -> value (the last one set)."""
    out, _ = process.communicate()  # exit 1: none of them is set
    found: dict[str, str] = {}
    for item in out.decode("utf-8", "surrogateescape").split("\0"):
        name, _, value = item.partition("\n")
        if name:
            found[name.lower()] = value
    return found


def _converts_line_endings(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "yes", "on", "1", "input")


def _attributes_files(*, repo: git.Repository, setting: str | None) -> Iterable[str]:
    """Every attributes file git may read for the project, but those it lists."""
    if os.environ.get("GIT_ATTR_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        yield from _SYSTEM_ATTRIBUTES
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    yield os.path.expanduser(setting) if setting else os.path.join(config_home, "git/attributes")
    if repo.common_dir:
        yield os.path.join(repo.common_dir, "info", "attributes")
    # The folders from the work tree's top down to the project root (listings start below).
    folder = repo.top
    yield os.path.join(folder, ".gitattributes")
    for part in repo.prefix.rstrip("/").split("/") if repo.prefix else ():
        folder = os.path.join(folder, part)
        yield os.path.join(folder, ".gitattributes")


class Conversion(NamedTuple):
    """What may make git convert a project file: `core.autocrlf` (every file, but those the
    attributes say are binary) and attributes files."""

    line_endings: bool
    attributes: bool


def conversion(
    *,
    repo: git.Repository,
    root: str,
    settings: Mapping[str, str],
    listed_attributes: Iterable[str],
    prefixes: Sequence[str] | None,
) -> Conversion | None:
    """What may convert files here, or None when nothing can (the usual case); `settings`:
    what `read_settings` read.

    `listed_attributes`: the `.gitattributes` files git listed below the root (or the
    prefixes); those above the prefixes, up to the work tree's top, are looked for here.
    """
    line_endings = _converts_line_endings(settings.get("core.autocrlf"))
    above = [
        os.path.join(root, folder, ".gitattributes")
        for prefix in prefixes or ()
        for folder in _folders_above(prefix)
    ]
    attributes = any(
        _may_convert(path)
        for path in chain(
            (os.path.join(root, path) for path in listed_attributes),
            _attributes_files(repo=repo, setting=settings.get("core.attributesfile")),
            above,
        )
    )
    return Conversion(line_endings, attributes) if line_endings or attributes else None


def _may_convert(path: str) -> bool:
    """Whether the attributes file at `path` may set a converting attribute (False when there
    is no such file); one that cannot be read may."""
    try:
        with open(path, "rb") as handle:
            return _MENTIONS_CONVERSION.search(handle.read()) is not None
    except FileNotFoundError:
        return False
    except OSError:
        return os.path.exists(path)  # a folder in its place is no attributes file


def _folders_above(prefix: str) -> list[str]:
    """The project folders holding `prefix` ("" for the root itself)."""
    parts = prefix.split("/")[:-1]
    return ["/".join(parts[:count]) for count in range(len(parts) + 1)]


def converted(
    *, repo: git.Repository, rule: Conversion, candidates: Sequence[str]
) -> frozenset[str]:
    """The candidates (project paths whose id would come from the index) git converts."""
    if not candidates or not rule.attributes:
        return frozenset(candidates) if rule.line_endings else frozenset()
    return _by_attributes(repo=repo, candidates=candidates, line_endings=rule.line_endings)


def _by_attributes(
    *, repo: git.Repository, candidates: Sequence[str], line_endings: bool
) -> frozenset[str]:
    """The candidates whose attributes (or `core.autocrlf`) make git convert them."""
    names = b"".join(os.fsencode(repo.prefix + path) + b"\0" for path in candidates)
    process = git.start(
        args=["check-attr", "-z", "--stdin", *_ATTRIBUTES], cwd=repo.top, stdin=True
    )
    out, _ = process.communicate(input=names)
    if process.returncode != 0:
        return frozenset(candidates)  # hashing them all is slower, never wrong
    fields = out.split(b"\0")
    cut = git.prefix_length(repo=repo)
    said: dict[str, dict[str, str]] = {}
    for path, name, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        said.setdefault(os.fsdecode(path[cut:]), {})[name.decode()] = value.decode()
    return frozenset(
        path for path, values in said.items() if _converts(values=values, line_endings=line_endings)
    )


def _specified(values: dict[str, str], names: Iterable[str]) -> bool:
    return any(values.get(name, "unspecified") not in ("unspecified", "unset") for name in names)


def _converts(*, values: dict[str, str], line_endings: bool) -> bool:
    text = values.get("text", "unspecified")
    if text == "unspecified":
        text = values.get("crlf", "unspecified")  # the old name, read where `text` is not set
    if text == "unset":  # -text (binary): no line endings change, filters still apply
        return _specified(values, ("filter", "ident", "working-tree-encoding"))
    if text != "unspecified":
        return True
    return line_endings or _specified(values, ("eol", "filter", "ident", "working-tree-encoding"))
