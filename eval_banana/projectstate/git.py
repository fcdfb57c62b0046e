"""The git plumbing the project state needs: where the repository is, and what git knows.

Every command runs at the top of the work tree with `-z` output (no quoting), without optional
locks (reading never rewrites `.git/index`, so eb never races the user's own git), and with
git's own environment honoured (a pre-commit hook's GIT_INDEX_FILE, a GIT_DIR/GIT_WORK_TREE
pair, relative ones read from the folder eb was started in, as git started there reads them).
Whatever the repository's config says, git compares every stat field it keeps before taking a
file for unchanged (`STRICT_STAT`): eb takes the index's blob id for every file git reports
clean, and `.git/config` is no file any watch covers.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import NamedTuple

from eval_banana.core.errors import ProjectStateError
from eval_banana.projectstate.blobs import REGULAR, FileIdentity, ObjectFormat


class Repository(NamedTuple):
    """A work tree and where the project root sits in it."""

    top: str  # absolute path of the work tree's top folder
    prefix: str  # the project root relative to `top`, "" or ending with "/"
    object_format: ObjectFormat
    common_dir: str = ""  # absolute path of the repository's shared git folder (info/, hooks/)


class NotARepository(Exception):
    """No work tree git can read holds the folder; `message` says so for a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class GitNotStarted(NotARepository):
    """git could not be started at all (not installed, or not on PATH)."""


class GitRefused(NotARepository):
    """git ran and would not name a work tree for the folder: `said` is the first line it
    printed; `other_owner`, the checkout's folder when another user owns it (git refuses such
    a checkout unless `safe.directory` trusts it, as in a CI container)."""

    def __init__(self, *, root: str, said: str, other_owner: str | None) -> None:
        super().__init__(f"git rev-parse in {root} failed: {said}")
        self.said = said
        self.other_owner = other_owner


# Paths git reads against the folder it is started in. eb starts git in the project root, so
# a relative one, set for the folder eb was started in, is made absolute against that first.
# (git reads a relative GIT_INDEX_FILE against the work tree's top wherever it starts: left.)
_PATHS_FROM_CWD = ("GIT_DIR", "GIT_WORK_TREE")


def environment() -> dict[str, str]:
    """The environment eb runs git in: the user's, without optional locks, with git's
    messages in one language (errors quote them) and relative GIT_DIR/GIT_WORK_TREE absolute."""
    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["LC_ALL"] = "C"
    for name in _PATHS_FROM_CWD:
        value = env.get(name)
        if value and not os.path.isabs(value):
            env[name] = os.path.abspath(value)
    return env


# `-c` settings every git command eb starts carries. git takes a file for unchanged when the
# stat data its index keeps still matches, and the repository's config says which fields count:
# `core.trustctime=false` and `core.checkStat=minimal` leave the size and the whole seconds of
# the modification time, which any process can put back (os.utime) after an edit of the same
# size; `core.ignoreStat` marks entries assume-unchanged; an fsmonitor hook (or daemon) answers
# which files changed instead of lstat (empty: off, for every git version); the untracked cache
# trusts folder times for which untracked files there are (false: not used, left in the index).
# A check or a judge can write `.git/config`, so the strict defaults are restored for eb alone.
STRICT_STAT = (
    "-c",
    "core.trustctime=true",
    "-c",
    "core.checkStat=default",
    "-c",
    "core.ignoreStat=false",
    "-c",
    "core.fsmonitor=",
    "-c",
    "core.untrackedCache=false",
)


def command(*, args: Sequence[str]) -> list[str]:
    """The command line of `git <args>` as eb runs it (`STRICT_STAT`)."""
    return ["git", *STRICT_STAT, *args]


def may_be_in_work_tree(*, root: str) -> bool:
    """False only when no folder from `root` up holds a `.git` and git is not pointed elsewhere
    (GIT_DIR, GIT_WORK_TREE): then no git command needs starting to learn there is no work
    tree, which spares every run in a plain folder two processes."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    folder = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def start(*, args: Sequence[str], cwd: str, stdin: bool = False) -> subprocess.Popen[bytes]:
    """Start `git <args>` in `cwd`, its output piped (and its input, with `stdin`)."""
    try:
        return subprocess.Popen(
            command(args=args),
            cwd=cwd,
            env=environment(),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise GitNotStarted(f"git cannot be started: {exc.strerror or exc}") from None


def finish(*, process: subprocess.Popen[bytes], what: str) -> bytes:
    """The whole output of a started git command; a non-zero exit raises ProjectStateError."""
    out, err = process.communicate()
    if process.returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise ProjectStateError(
            f"git {what} failed: {message[-1] if message else f'exit {process.returncode}'}"
        )
    return out


def stop(*, process: subprocess.Popen[bytes]) -> None:
    """End and reap a started git command whose output is not wanted."""
    if process.poll() is None:
        process.kill()
    process.communicate()


def run(*, args: Sequence[str], cwd: str, what: str) -> bytes:
    return finish(process=start(args=args, cwd=cwd), what=what)


def find_repository(*, root: str) -> Repository:
    """The work tree holding `root`; NotARepository when there is none (without starting git
    when no folder up from `root` holds a `.git`)."""
    if not may_be_in_work_tree(root=root):
        raise NotARepository(f"{root} is not inside a git work tree")
    process = start(
        args=[
            "rev-parse",
            "--show-toplevel",
            "--show-prefix",
            "--show-object-format",
            "--git-common-dir",
        ],
        cwd=root,
    )
    out, err = process.communicate()
    if process.returncode != 0:
        said = next(iter(err.decode("utf-8", "replace").strip().splitlines()), "")
        raise GitRefused(
            root=root,
            said=said.strip() or f"exit {process.returncode}",
            other_owner=_owned_by_another_user(root=root),
        )
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2 or not lines[0]:  # inside a .git folder or a bare repository
        raise NotARepository(f"{root} is not inside a git work tree")
    object_format: ObjectFormat = "sha256" if lines[2:3] == ["sha256"] else "sha1"
    common_dir = os.path.join(root, lines[3]) if len(lines) > 3 else ""  # relative to `root`
    return Repository(
        top=lines[0], prefix=lines[1], object_format=object_format, common_dir=common_dir
    )


def _owned_by_another_user(*, root: str) -> str | None:
    """The folder holding the `.git` nearest `root` when it, or that `.git`, belongs to
    another user than eb's (root's own, or a sudo caller's, count as eb's, as for git)."""
    if os.environ.get("GIT_DIR") or not hasattr(os, "geteuid"):
        return None  # the repository is elsewhere, or owners are no user ids (Windows)
    users = {os.geteuid()}
    if os.geteuid() == 0 and os.environ.get("SUDO_UID", "").isdigit():
        users.add(int(os.environ["SUDO_UID"]))
    folder = os.path.abspath(root)
    while not os.path.lexists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    try:
        owners = {os.lstat(folder).st_uid, os.lstat(os.path.join(folder, ".git")).st_uid}
    except OSError:
        return None
    return folder if owners - users else None


# git matches every path against every pathspec: past a few dozen, comparing the whole tree
# and filtering afterwards is faster (on the W8 tree: 25 pathspecs beat none, 50 tie, and 300
# made `git diff` 2.5 times slower).
MAX_PATHSPECS = 32


def narrows(prefixes: Sequence[str] | None) -> bool:
    """Whether `pathspecs` passes these prefixes to git (else the caller filters)."""
    return prefixes is not None and len(prefixes) <= MAX_PATHSPECS


def pathspecs(
    *, repo: Repository, prefixes: Sequence[str] | None, leave_out: Sequence[str] = ()
) -> list[str]:
    """`-- <pathspec>...` limiting a command to the project root, or to paths below it, and
    never into the folders `leave_out` (project-relative, ending in `/`).

    More than MAX_PATHSPECS prefixes give the whole root: see `narrows`. A folder left out is
    one git does not walk at all: eb's run folders, which nobody need ignore, hold thousands of
    files after a few runs, and listing the untracked ones would walk every one of them.
    """
    left_out = [f":(exclude,literal){repo.prefix}{folder.rstrip('/')}" for folder in leave_out]
    if not narrows(prefixes):
        return ["--", *([f":(literal){repo.prefix}"] if repo.prefix else []), *left_out]
    assert prefixes is not None
    return ["--", *(f":(literal){repo.prefix}{prefix}" for prefix in prefixes), *left_out]


def holder_pathspecs(*, repo: Repository, prefixes: Sequence[str] | None) -> list[str]:
    """Pathspecs naming exactly each folder that holds one of `prefixes` (`vendor` and
    `vendor/lib` for `vendor/lib/lib.py`), for the commands that read the index alone, beside
    `pathspecs`' own; none when those name the whole root. A submodule is one index entry,
    which no pathspec of a path inside it lists, and a pattern naming a file in it matches it.

    Each is a glob whose last character is a set of its own (`vendor/li[\\b]`): git matches a
    pathspec holding a wildcard against the whole path, while a plain one names everything
    below a folder too. Only the index is matched so: a command that walks the work tree
    (`status`, `ls-files -o`) would walk each such folder whole."""
    if not narrows(prefixes):
        return []
    assert prefixes is not None
    holders = {prefix[:at] for prefix in prefixes for at, char in enumerate(prefix) if char == "/"}
    return [f":(glob){_exact_glob(repo.prefix + holder)}" for holder in sorted(holders)]


def _exact_glob(path: str) -> str:
    """A glob git matches against `path` alone: its glob characters escaped, its last
    character a set of its own."""
    head = "".join(f"\\{char}" if char in "*?[]\\" else char for char in path[:-1])
    return f"{head}[\\{path[-1]}]"


def prefix_length(*, repo: Repository) -> int:
    """How many bytes of a repo-relative path git prints name the project's folder."""
    return len(repo.prefix.encode("utf-8", "surrogateescape"))


def split_paths(*, output: bytes, repo: Repository) -> list[str]:
    """NUL-separated repo-relative paths -> project-relative paths (undecodable bytes kept)."""
    cut = prefix_length(repo=repo)
    return [os.fsdecode(item[cut:]) for item in output.split(b"\0") if item]


# The index listing: `<tag> <mode> <id> <stage>\t<path>` per entry, the tag saying whether git
# compares the entry with the work tree at all.
INDEX_LISTING = ("ls-files", "-s", "-v", "-z")

# Tags of entries git never compares with the work tree, so `diff-files` and `status` never
# report them whatever the file holds: lowercase for assume-unchanged (`update-index
# --assume-unchanged`, core.ignoreStat), S for skip-worktree (`--skip-worktree`, and every
# entry a sparse checkout leaves out of the work tree).
_UNWATCHED_TAGS = frozenset("hsmS")


class IndexListing(NamedTuple):
    """What the index listing says about the project's paths."""

    ids: dict[str, str]  # path -> object id of its index entry
    modes: dict[str, str]  # path -> mode of each entry that is no regular (100644) file
    gitlinks: frozenset[str]  # submodules: the id is the commit they record
    conflicted: frozenset[str]  # paths with merge stages: only the work tree can say
    unwatched: frozenset[str]  # entries git never compares with the work tree: only it can say
    attributes: bool  # whether a `.gitattributes` may be among them (a name ending so is)


def _id_width(repo: Repository) -> int:
    return 64 if repo.object_format == "sha256" else 40


def _unwatched_ids(*, records: list[str], width: int, cut: int) -> dict[str, FileIdentity]:
    """Path -> index mode and id of the entries whose tag says git does not look at their
    file."""
    # Nearly every index has none: the set of first letters is cheap (3 ms for 60,000 entries).
    if {record[:1] for record in records}.isdisjoint(_UNWATCHED_TAGS):
        return {}
    return {
        record[cut:]: FileIdentity(record[2:8], record[9 : 9 + width])
        for record in records
        # A submodule counts by the commit it records, whatever its folder holds.
        if record[:1] in _UNWATCHED_TAGS and record[2:9] != "160000 "
    }


def _records(output: bytes) -> list[str]:
    return [record for record in output.decode("utf-8", "surrogateescape").split("\0") if record]


def unwatched_entries(*, output: bytes, repo: Repository) -> dict[str, FileIdentity]:
    """The index listing -> project path: index mode and id of each entry git never compares
    with the work tree (assume-unchanged, skip-worktree)."""
    width = _id_width(repo)
    cut = 2 + 7 + width + 3 + len(repo.prefix)
    return _unwatched_ids(records=_records(output), width=width, cut=cut)


def index_links(*, output: bytes, repo: Repository) -> list[str]:
    """The index listing -> project paths of the symbolic links it holds (mode 120000).
    Nearly every index has none: one search of the bytes says so unparsed."""
    if b" 120000 " not in output:
        return []
    width = _id_width(repo)
    cut = 2 + 7 + width + 3 + len(repo.prefix)
    return [record[cut:] for record in _records(output) if record[2:9] == "120000 "]


def index_gitlinks(*, output: bytes, repo: Repository) -> frozenset[str]:
    """The index listing -> project paths of the submodules it holds (mode 160000). Nearly
    every index has none: one search of the bytes says so unparsed."""
    if b" 160000 " not in output:
        return frozenset()
    width = _id_width(repo)
    cut = 2 + 7 + width + 3 + len(repo.prefix)
    return frozenset(record[cut:] for record in _records(output) if record[2:9] == "160000 ")


def parse_stage_entries(*, output: bytes, repo: Repository) -> IndexListing:
    """The index listing (`INDEX_LISTING`) -> the index entries below the project root.

    Each record is `<tag> <mode> <id> <stage>\t<path>`, with fixed widths before the path;
    slicing fixed columns of 60,000 records is several times faster than a regular expression.
    """
    text = output.decode("utf-8", "surrogateescape")
    records = [record for record in text.split("\0") if record]
    width = _id_width(repo)
    cut = 2 + 7 + width + 3 + len(repo.prefix)  # tag, "<mode> ", id, " <stage>\t", prefix
    ids = dict(zip([r[cut:] for r in records], [r[9 : 9 + width] for r in records], strict=True))
    # Nearly every entry is a regular file: only the others are kept (the mode is r[2:8]).
    modes = {r[cut:]: r[2:8] for r in records if r[2:8] != REGULAR}
    gitlinks: frozenset[str] = frozenset()
    conflicted: frozenset[str] = frozenset()
    if " 160000 " in text:
        gitlinks = frozenset(r[cut:] for r in records if r[2:9] == "160000 ")
    stage_column = 2 + 7 + width + 1
    if any(f" {stage}\t" in text for stage in "123"):
        conflicted = frozenset(r[cut:] for r in records if r[stage_column] != "0")
    unwatched = frozenset(_unwatched_ids(records=records, width=width, cut=cut))
    return IndexListing(
        ids=ids,
        modes=modes,
        gitlinks=gitlinks,
        conflicted=conflicted,
        unwatched=unwatched,
        attributes=".gitattributes\x00" in text,
    )
