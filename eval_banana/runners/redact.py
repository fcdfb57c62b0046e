"""Secrets never land in a file eb writes: values of credential-like variables become `***`.

A check or a judge can print its environment; under the default `inherit` policy that puts API
keys into stdout files, results, every report and the console. The values of variables whose
names look like credentials (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*_CREDENTIALS`,
`*_ACCESS_KEY_ID`, and any named in `[execution] redact`), and every value the agent's
`provider_env` reads from the environment (`run_redactor`: one set per run) are replaced by
`***` in each result before it is written, and in the check's output files after it ends
(rewritten, streaming, only when they hold such a value). Values shorter than MIN_CHARS are
left alone: short values such as `1` or `true` would turn up everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from eval_banana.core.masking import MASK
from eval_banana.core.secreturl import S3_ENDPOINT_VARIABLES, url_secrets
from eval_banana.harness.command import placeholder_reads, provider_values
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, ResolvedHarness
from eval_banana.runners.retries import EVIDENCE_SUFFIXES
from eval_banana.runners.secretforms import AnchorScan, SecretForms
from eval_banana.settings.envpolicy import SECRET_NAMES
from eval_banana.settings.table import variable_of

REMOTE_VARIABLE = variable_of("cache.remote")
ENDPOINT_VARIABLE = variable_of("cache.remote_endpoint")
# `_ACCESS_KEY_ID`: the other half of an access key pair (AWS_ACCESS_KEY_ID, which an S3
# remote's checks receive, and the like of S3-compatible stores): not a secret by itself, but
# it names the account, and printed by a check it would travel in the shared cache's entries
# to every runner that reads them, a fork's pull request too.
CREDENTIAL_SUFFIXES: tuple[str, ...] = (
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_CREDENTIALS",
    "_ACCESS_KEY_ID",
)
MIN_CHARS = 6
# eb's own settings and markers are not secrets (EVAL_BANANA_CHECK_TOKEN ends in _TOKEN).
_OWN_PREFIX = "EVAL_BANANA_"
_BLOCK = 1 << 20


def is_credential_name(*, name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a variable's value is redacted: a credential-like name, or one listed."""
    if any(fnmatchcase(name, pattern) for pattern in extra):
        return True
    if name in SECRET_NAMES:
        return True  # the shared cache's token and signing key
    if name.startswith(_OWN_PREFIX):
        return False
    return name.upper().endswith(CREDENTIAL_SUFFIXES)


class Redactor:
    """Replaces a fixed set of secret values in texts, JSON-like values and files, each as it
    is and in the JSON-escaped forms an agent prints it in (eval_banana.runners.secretforms)."""

    def __init__(self, *, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is masked whole.
        unique = {value for value in secrets if len(value) >= MIN_CHARS}
        self.secrets: tuple[str, ...] = tuple(sorted(unique, key=lambda v: (-len(v), v)))
        self._forms = tuple(SecretForms(value) for value in self.secrets)
        # One pass over a text tells which secrets to search it for; each of those is then
        # masked in turn, longest first, as when every secret was searched for.
        self._scan = AnchorScan(self._forms)
        # Each read block is searched with the previous one's last _longest - 1 bytes.
        self._longest = max((forms.longest for forms in self._forms), default=0)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    @property
    def reach(self) -> int:
        """How far past a cut a secret cut in two can reach (eval_banana.core.masking)."""
        return max(0, self._longest - 1)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every secret in `text`, in any form, in order (they may overlap)."""
        found = self._scan.candidates(text)
        return sorted(span for forms in found for span in forms.text_spans(text))

    def text(self, text: str) -> str:
        if not text:
            return text
        for forms in self._scan.candidates(text):
            text = forms.masked(text, mask=MASK)
        return text

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value with every string redacted (dict keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def _contains(self, path: Path) -> bool:
        overlap = self._longest - 1
        carry = b""
        with path.open("rb") as handle:
            while block := handle.read(_BLOCK):
                window = carry + block
                if any(forms.occurs_in(window) for forms in self._scan.candidates(window)):
                    return True
                carry = window[-overlap:] if overlap else b""
        return False

    def _occurrences(self, buffer: bytes) -> list[tuple[int, int]]:
        """Non-overlapping (start, end) of the secrets in `buffer`, in order."""
        found: list[tuple[int, int]] = []
        for forms in self._scan.candidates(buffer):
            found.extend(forms.spans(buffer))
        found.sort(key=lambda span: (span[0], -span[1]))
        kept: list[tuple[int, int]] = []
        for span in found:
            if not kept or span[0] >= kept[-1][1]:
                kept.append(span)
        return kept

    def _rewrite(self, path: Path) -> None:
        """Copy `path` with the secrets masked, block by block, then replace it atomically."""
        overlap = self._longest - 1
        out: list[bytes] = []
        carry = b""
        mask = MASK.encode()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.redacting")
        with path.open("rb") as source, tmp.open("wb") as target:
            while True:
                block = source.read(_BLOCK)
                buffer = carry + block
                # Emit what no secret can still straddle; at the end, everything.
                cut = len(buffer) if not block else max(0, len(buffer) - overlap)
                position = 0
                for start, end in self._occurrences(buffer):
                    if start >= cut:
                        break
                    out.append(buffer[position:start])
                    out.append(mask)
                    position = end
                    cut = max(cut, end)  # a secret that starts before the cut ends inside
                out.append(buffer[position:cut])
                target.write(b"".join(out))
                out.clear()
                carry = buffer[cut:]
                if not block:
                    break
        os.replace(tmp, path)

    def file(self, path: Path) -> bool:
        """Mask the secrets in one file; True when it held any (and was rewritten)."""
        if not self or not path.is_file() or not self._contains(path):
            return False
        try:
            self._rewrite(path)
        finally:
            path.with_name(f".{path.name}.{os.getpid()}.redacting").unlink(missing_ok=True)
        return True


def redactor_for(
    *,
    environ: Mapping[str, str],
    names: Iterable[str],
    extra_env: Mapping[str, str] | None = None,
    remotes: Iterable[str | None] = (),
    also: Iterable[Mapping[str, str]] = (),
    values: Iterable[str] = (),
) -> Redactor:
    """A redactor from credential-like variables of `environ`, `extra_env` and each of `also`,
    the given `values`, and the password and query of the shared cache's URL and S3 endpoint:
    those `environ` and `extra_env` give (boto3's AWS_ENDPOINT_URL_S3 and AWS_ENDPOINT_URL
    among them) and each in `remotes` (the configured ones, which a stage file may
    hold masked while the variable holds them whole). The URL is withheld from checks, but one
    may read it from the config file."""
    listed = tuple(names)
    secrets = [
        value
        for source in (environ, extra_env or {}, *also)
        for name, value in source.items()
        if is_credential_name(name=name, extra=listed)
    ]
    secrets.extend(values)
    # boto3's own endpoint variables too: a check under `inherit` receives them.
    named = (REMOTE_VARIABLE, ENDPOINT_VARIABLE, *S3_ENDPOINT_VARIABLES)
    urls = (
        *(source.get(name) for source in (environ, extra_env or {}) for name in named),
        *remotes,
    )
    secrets.extend(secret for url in urls if url for secret in url_secrets(url))
    return Redactor(secrets=secrets)


def run_redactor(
    *, config: ConfigDoc, harness: ResolvedHarness | None, environ: Mapping[str, str]
) -> Redactor:
    """The redactor of a run, for every file, result and console line it writes: besides the
    credential-like variables of `environ` and [harness.env], what its agent receives on top of
    them: every value a `provider_env` placeholder reads from `environ`, whatever the name it is
    given, and the credential-like variables of `provider_env` and `fixed_env`."""
    settings = config.settings
    layers: list[Mapping[str, str]] = []
    read: list[str] = []
    if harness is not None:
        template = harness.template
        layers = [provider_values(template=template, environ=environ), template.fixed_env]
        read = placeholder_reads(template=template, environ=environ)
    return redactor_for(
        environ=environ,
        names=settings.execution.redact,
        extra_env=settings.harness.env,
        remotes=(settings.cache.remote, settings.cache.remote_endpoint),
        also=layers,
        values=read,
    )


def redact_check(
    *, run_dir: Path, stem: str, result: CheckResult, redactor: Redactor
) -> CheckResult:
    """Mask secrets in one finished check: its output files (every attempt's) and its result."""
    files = [run_dir / "checks" / f"{stem}{suffix}" for suffix in EVIDENCE_SUFFIXES.values()]
    for attempt in result.details.get("attempts") or []:
        evidence = attempt.get("evidence") if isinstance(attempt, dict) else None
        if isinstance(evidence, dict):
            files.extend(run_dir / str(path) for path in evidence.values())
    for path in files:
        redactor.file(path)
    return CheckResult.model_validate(redactor.value(result.model_dump(mode="json")))
