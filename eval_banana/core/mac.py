"""The MAC every cache entry and kept run carries, keyed by the cache's own secret (and the
one eb's note of the files it wrote into the project carries, settings/written.py).

    <cache dir>/secret.key   64 hex digits, owner-only (0600) and eb's user's, made by eb on
                             its first write (in a folder eb makes owner-only, 0700)

A stored document is text that begins with its MAC as the first member, then the rest exactly
as eb wrote it:

    {"mac": "hmac-sha256:<64 hex>", <the document's other members>

The MAC is HMAC-SHA256, keyed by the secret, over the document's text without that member
(`{` followed by the rest of the file). It covers the exact bytes eb wrote: nothing is encoded
again to be compared, and checking a kept run of 1,000 checks is one pass over its file. An
edit of any byte, by a tool or a person who cannot read the secret, or damage, makes the MAC
wrong and the document a miss. A process that can read the secret can forge one: the run's
own record of what it wrote (cache/ownwrites.py) and the watch on eb's state guard against
those (docs/fail-closed.md#the-caches-mac).
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import os
import re
import secrets
import stat
from hashlib import sha256
from pathlib import Path

from eval_banana.core.files import OWNER_ONLY_FOLDER, make_folders

SECRET_NAME = "secret.key"
MAC_PATTERN = r"^hmac-sha256:[0-9a-f]{64}$"
_PREFIX = b'{"mac": "hmac-sha256:'
_HEX_END = len(_PREFIX) + 64
_AFTER = b'", '
# Which document the MAC is for: a MAC of one kind of file is no MAC of another.
CACHE_DOMAIN = b"eval-banana/cache-mac/1\0"
WRITTEN_DOMAIN = b"eval-banana/written-mac/1\0"
_SECRET_RE = re.compile(rb"[0-9a-f]{64}\n?")
_SECRET_MAX = 128
_TEMP_NAMES = itertools.count()


class SecretUnusable(OSError):
    """The cache's secret cannot be read or made: nothing is stored, nothing is reused."""


def mac_of(*, key: bytes, rest: bytes | memoryview, domain: bytes = CACHE_DOMAIN) -> str:
    """`hmac-sha256:<hex>` of a document's text without its MAC member: `{` and `rest`, the
    members after it (fed in place: a kept run of 1,000 checks is most of a megabyte).
    `domain`: which kind of document it is."""
    mac = hmac.new(key, domain, sha256)
    mac.update(b"{")
    mac.update(rest)
    return "hmac-sha256:" + mac.hexdigest()


def signed_text(*, key: bytes, text: bytes, domain: bytes = CACHE_DOMAIN) -> bytes:
    """`text` (a JSON object's text, without a `mac` member) with its MAC as the first member."""
    if not text.startswith(b"{") or text.startswith(b"{}"):
        raise ValueError("only a JSON object with members is signed")
    rest = text[1:].lstrip(b"\n ")
    mac = mac_of(key=key, rest=rest, domain=domain).encode("ascii")
    return b'{"mac": "' + mac + _AFTER + rest


def mac_problem(*, key: bytes, data: bytes, domain: bytes = CACHE_DOMAIN) -> str | None:
    """Why `data` (a stored document's bytes) is not what eb signed with `key`, or None."""
    if not data.startswith(_PREFIX) or data[_HEX_END : _HEX_END + len(_AFTER)] != _AFTER:
        return "has no MAC (written by an older eb, or by something else)"
    stated = data[len(_PREFIX) - len(b"hmac-sha256:") : _HEX_END].decode("ascii", "replace")
    rest = memoryview(data)[_HEX_END + len(_AFTER) :]
    if not hmac.compare_digest(stated, mac_of(key=key, rest=rest, domain=domain)):
        return "has a MAC that does not match its content (edited, damaged, or another cache's)"
    return None


def secret_path(*, folder: Path) -> Path:
    return folder / SECRET_NAME


def load_secret(*, folder: Path, create: bool) -> bytes | str:
    """The cache's secret, or why there is none to use; `create`: make it when it is absent."""
    path = secret_path(folder=folder)
    found = _read_secret(path=path)
    if found is None and create:
        try:
            _create_secret(path=path)
        except OSError as exc:
            return f"cannot be made ({exc.strerror or exc})"
        found = _read_secret(path=path)
    return "is missing" if found is None else found


def _read_secret(*, path: Path) -> bytes | str | None:
    """The secret's bytes, the problem, or None: absent. Only an owner-only regular file of
    the user eb runs as."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file"
        foreign = _foreign_owner(info=info)
        if foreign is not None:
            return foreign
        if info.st_mode & 0o077:
            return (
                f"may be read by others (mode {stat.S_IMODE(info.st_mode):04o}); "
                "eb keeps it owner-only (chmod 600 it, or remove the cache folder)"
            )
        data = os.read(fd, _SECRET_MAX)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if not _SECRET_RE.fullmatch(data):
        return "is not 64 hex digits (damaged; remove the cache folder to start over)"
    return data[:64]


def _foreign_owner(*, info: os.stat_result) -> str | None:
    """Why a secret another user owns is not used, or None. Its mode says nothing about who put
    it there: a user who may write the cache folder can remove eb's secret and put theirs in its
    place (owner-only, theirs), then sign whatever verdicts they like."""
    if not hasattr(os, "geteuid"):  # no user ids on this system
        return None
    user = os.geteuid()
    if info.st_uid == user:
        return None
    return (
        f"belongs to another user (uid {info.st_uid}; eb runs as uid {user}), who could have "
        "signed any entry in the folder; remove the cache folder to start over (and keep it "
        "owner-only: chmod 700)"
    )


def _create_secret(*, path: Path) -> None:
    """Write a new secret beside its final name and link it there: the link never replaces a
    secret another eb made meanwhile, and no reader ever sees half of one."""
    make_folders(folder=path.parent, mode=OWNER_ONLY_FOLDER)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temp, flags, 0o600)
    try:
        try:
            os.write(fd, secrets.token_hex(32).encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: a rename, if still absent
            if not path.exists():
                os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
