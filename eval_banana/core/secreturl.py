"""A shared cache's URL as eb writes or prints it: never with the secret a user put in it.

`https://user:password@host/prefix` authenticates with HTTP basic auth, and a query string can
carry a signature. Both are secrets: the password and the query are masked in every stage
file, report and message; the run itself uses the URL as given.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
# Where boto3 reads an S3 remote's endpoint when `[cache] remote_endpoint` is unset, first
# wins: a URL whose password and query are masked as the setting's are.
S3_ENDPOINT_VARIABLES: tuple[str, ...] = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


def shown_url(url: str) -> str:
    """`url` with the password of its user part and its query string masked."""
    if "://" not in url or ("@" not in url and "?" not in url):
        return url
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a broken host part (`[::1`): refused where it is used, masked here
        scheme, rest = url.split("://", 1)
        return f"{scheme}://{MASK}@{rest.rsplit('@', 1)[1]}" if "@" in rest else url
    netloc = parts.netloc
    if password is not None:
        netloc = f"{parts.username}:{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = MASK if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """What `shown_url` masks in `url`, as a check could print it: the password (as written and
    percent-decoded) and the query string."""
    if "://" not in url or ("@" not in url and "?" not in url):
        return []
    try:
        parts = urlsplit(url)
        password, query = parts.password, parts.query
    except ValueError:
        userinfo = url.split("://", 1)[1].rsplit("@", 1)[0] if "@" in url else ""
        password, query = userinfo.partition(":")[2] or userinfo or None, ""
    found = [password, unquote(password)] if password else []
    return [*found, query] if query else found


def unmasked(*, url: str, candidates: Iterable[str | None]) -> str | None:
    """The URL to use for `url` as a stage file recorded it: itself when nothing of it was
    masked, else the first of `candidates` (the URLs the environment gives now) that masks to
    it; None when none does (its secret is nowhere to be had)."""
    if MASK not in url or shown_url(url) != url:
        return url
    return next((given for given in candidates if given and shown_url(given) == url), None)
