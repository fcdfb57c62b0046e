"""Disposable copies of a project for one judge: made, run in, compared and removed.

Two ways, the faster first:
- **overlay**: on Linux with `unshare` and overlayfs, the judge runs in a private mount
  namespace where an overlay of the project folder is mounted. As root that is a mount
  namespace alone; as any other user, a user namespace too, in which the user is root (Linux
  5.11 and later let such a namespace mount an overlay), so the judge sees itself as uid 0 while
  what it writes is the user's own outside. The copy costs no file copying; everything the judge
  writes lands in an upper folder, so only those files are compared with the project; the mount
  vanishes with the judge's last process, even if eb is killed.
- **copy**: where no overlay can be mounted (no overlayfs, or user namespaces disabled), the
  project's files (the file set of its state) are copied into a temporary folder, cloned
  copy-on-write where the file system can (FICLONE), several files at a time; what the judge
  changed is found by comparing the copy with the project afterwards.

Either way a file counts as changed only when its content differs (`same_content`, the rule
watching the project in place applies): a file saved unchanged is no change.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, NamedTuple

from eval_banana.core.realpaths import real_path
from eval_banana.projectstate.blobs import same_content

Method = Literal["overlay", "copy"]
# How an overlay is entered: root needs a mount namespace only; any other user also a user
# namespace in which it is root (it may mount there, and exec drops that power again for none).
Namespace = Literal["mount", "user"]
_UNSHARE: dict[Namespace, tuple[str, ...]] = {
    "mount": ("unshare", "--mount", "--propagation", "private", "--"),
    "user": ("unshare", "--map-root-user", "--mount", "--propagation", "private", "--"),
}
_FICLONE = 0x40049409
_COPY_THREADS = 8
_OVERLAY_SCRIPT = (
    'mount -t overlay eb-isolation -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4" '
    '&& cd "$4" && shift 4 && exec "$@"'
)
# The same, and first each of `n` paths bound onto itself read-only, then each of `m` paths
# inside those bound again writable: `... merged n ro... m rw... -- argv`.
_REBIND = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do mount --bind "$1" "$1" '
    '&& mount -o remount,bind,$2 "$1" "$1" || { echo "eb: cannot mount $1 $2" >&2; exit 125; }; '
    "shift; n=$((n-1)); done; "
)
_GUARDED_SCRIPT = (
    'mount -t overlay eb-isolation -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4" '
    '&& cd "$4" && shift 4 || exit 125; '
    + _REBIND.replace("$2", "ro")
    + _REBIND.replace("$2", "rw")
    + 'exec "$@"'
)
_overlay_usable: bool | None = None
_overlay_lock = threading.Lock()


class Change(NamedTuple):
    path: str  # root-relative, POSIX
    kind: Literal["added", "changed", "removed"]


def this_process_namespace() -> Namespace:
    return "mount" if hasattr(os, "geteuid") and os.geteuid() == 0 else "user"


def overlay_command(
    *,
    namespace: Namespace,
    layers: Sequence[str],
    argv: Sequence[str],
    read_only: Sequence[str] = (),
    writable: Sequence[str] = (),
) -> list[str]:
    """Run `argv` from the merged folder of an overlay of `layers` (lower, upper, work, merged);
    `read_only` paths are bound read-only in its namespace, then `writable` ones inside them
    writable again."""
    if not read_only:
        return [*_UNSHARE[namespace], "sh", "-c", _OVERLAY_SCRIPT, "eb-isolation", *layers, *argv]
    mounts = [str(len(read_only)), *read_only, str(len(writable)), *writable]
    return [
        *_UNSHARE[namespace],
        "sh",
        "-c",
        _GUARDED_SCRIPT,
        "eb-isolation",
        *layers,
        *mounts,
        *argv,
    ]


def probe_command(*, namespace: Namespace, scratch: Path) -> list[str]:
    """A write through an overlay of a one-file folder under `scratch`, which prints `y`."""
    for name in ("lower", "upper", "work", "merged"):
        (scratch / name).mkdir()
    (scratch / "lower" / "f").write_text("x")
    layers = [str(scratch / name) for name in ("lower", "upper", "work", "merged")]
    # A write, so that copying a file up (which a user namespace can refuse) is tried too.
    return overlay_command(
        namespace=namespace, layers=layers, argv=["sh", "-c", "echo y > f && cat f"]
    )


def _probe_overlay() -> bool:
    """Whether this process can mount an overlay in a private namespace (once a process)."""
    if not sys.platform.startswith("linux"):
        return False
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    scratch = Path(tempfile.mkdtemp(prefix="eb-overlay-probe-"))
    try:
        command = probe_command(namespace=this_process_namespace(), scratch=scratch)
        done = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        return done.returncode == 0 and done.stdout == b"y\n"
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def overlay_usable() -> bool:
    global _overlay_usable
    with _overlay_lock:
        if _overlay_usable is None:
            _overlay_usable = _probe_overlay()
        return _overlay_usable


class Workspace:
    """One judge's copy of the project."""

    def __init__(
        self,
        *,
        root: Path,
        scratch: Path,
        method: Method,
        paths: Sequence[str],
        namespace: Namespace = "mount",
        read_only: Sequence[str] = (),
        writable: Sequence[str] = (),
    ) -> None:
        self.root = root
        self.scratch = scratch
        self.method = method
        self.namespace = namespace
        self._paths = paths
        self._set = frozenset(paths)
        # Only root's own mount namespace binds them: a user namespace may not clear the flags
        # (nosuid, nodev) a remount would, and eb watches its state there anyway.
        self.read_only = list(read_only) if namespace == "mount" else []
        self.writable = list(writable) if namespace == "mount" else []

    @property
    def path(self) -> Path:
        """Where the judge sees the project (its working folder)."""
        return self.scratch / ("merged" if self.method == "overlay" else "project")

    @property
    def cwd(self) -> Path:
        """The folder the judge's process starts in (the overlay enters `path` itself)."""
        return self.scratch if self.method == "overlay" else self.path

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs `argv` inside this copy."""
        if self.method != "overlay":
            return list(argv)
        layers = [str(self.root), *(str(self.scratch / n) for n in ("upper", "work", "merged"))]
        return overlay_command(
            namespace=self.namespace,
            layers=layers,
            argv=argv,
            read_only=self.read_only,
            writable=self.writable,
        )

    def changes(self) -> list[Change]:
        """What the judge added, changed or removed, relative to the project, in path order."""
        found = self._overlay_changes() if self.method == "overlay" else self._copy_changes()
        return sorted(found)

    def _overlay_changes(self) -> Iterator[Change]:
        upper = self.scratch / "upper"
        for folder, dirs, files in os.walk(upper):
            relative_folder = os.path.relpath(folder, upper)
            for name in [*dirs, *files]:
                full = os.path.join(folder, name)
                relative = name if relative_folder == "." else f"{relative_folder}/{name}"
                info = os.lstat(full)
                if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:  # a whiteout: removed
                    yield Change(path=relative, kind="removed")
                elif not stat.S_ISDIR(info.st_mode):
                    # Written, so copied up: a change only if its content differs.
                    original = self.root / relative
                    if not os.path.lexists(original):
                        yield Change(path=relative, kind="added")
                    elif not _same(original, Path(full)):
                        yield Change(path=relative, kind="changed")

    def _copy_changes(self) -> Iterator[Change]:
        copy = self.path
        seen: set[str] = set()
        for folder, _, files in os.walk(copy):
            relative_folder = os.path.relpath(folder, copy)
            for name in files:
                relative = name if relative_folder == "." else f"{relative_folder}/{name}"
                relative = relative.replace(os.sep, "/")
                seen.add(relative)
                original = self.root / relative
                if not os.path.lexists(original) or relative not in self._set:
                    yield Change(path=relative, kind="added")
                elif not _same(original, Path(folder) / name):
                    yield Change(path=relative, kind="changed")
        for relative in self._paths:
            if relative not in seen:
                yield Change(path=relative, kind="removed")

    def remove(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


def _same(original: Path, copy: Path) -> bool:
    """Whether the copy of a file still holds the original's content, as watching the project
    in place counts it: a file saved unchanged is no change."""
    try:
        return same_content(path=str(original), other=str(copy))
    except OSError:
        return False


def _clone_file(*, source: Path, target: Path) -> None:
    """Copy one file: a symlink as a symlink; a file cloned copy-on-write where possible."""
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
        return
    with source.open("rb") as src, target.open("wb") as dst:
        try:
            import fcntl

            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY):
                raise
            shutil.copyfileobj(src, dst, 1 << 20)
    shutil.copymode(source, target)


def _copy_files(*, root: Path, target: Path, paths: Iterable[str]) -> None:
    listed = list(paths)
    for folder in sorted({os.path.dirname(path) for path in listed}):
        (target / folder).mkdir(parents=True, exist_ok=True)

    def one(relative: str) -> None:
        with contextlib.suppress(FileNotFoundError):  # gone since the state was read
            _clone_file(source=root / relative, target=target / relative)

    with ThreadPoolExecutor(max_workers=_COPY_THREADS) as pool:
        for _ in pool.map(one, listed):
            pass


def make_workspace(
    *,
    root: Path,
    paths: Sequence[str],
    method: Method | None = None,
    prefix: str = "eb-judge-",
    namespace: Namespace | None = None,
    read_only: Sequence[str] = (),
    writable: Sequence[str] = (),
) -> Workspace:
    """A fresh copy of the project at `root` (`paths`: its file set, for a file copy).

    `namespace` says how an overlay is entered (default: as this process needs it). An overlay
    entered as root also binds the `read_only` paths read-only in its namespace, and then the
    `writable` ones inside them writable again (eb's state and the current run folder; a
    deterministic check's own evidence folder).
    """
    chosen: Method = method or ("overlay" if overlay_usable() else "copy")
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    if real_path(scratch).is_relative_to(real_path(root)):
        # An overlay's upper folder may not lie inside its lower one; a copy inside the project
        # would be part of it. Temporary files belong outside the project.
        chosen = "copy" if chosen == "overlay" else chosen
    workspace = Workspace(
        root=root,
        scratch=scratch,
        method=chosen,
        paths=paths,
        namespace=namespace or this_process_namespace(),
        read_only=read_only,
        writable=writable,
    )
    try:
        if chosen == "overlay":
            for name in ("upper", "work", "merged"):
                (scratch / name).mkdir()
        else:
            workspace.path.mkdir()
            _copy_files(root=root, target=workspace.path, paths=paths)
    except BaseException:
        workspace.remove()
        raise
    return workspace
