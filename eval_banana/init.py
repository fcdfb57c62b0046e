"""`eb init`: the config template, the check schema for editors, and a first passing check."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from eval_banana.artifacts import write_text_atomic
from eval_banana.errors import ConfigError

CONFIG_PATH = Path(".eval-banana") / "config.toml"
SCHEMA_PATH = Path(".eval-banana") / "schemas" / "check.schema.json"
EXAMPLE_PATH = Path("eval_checks") / "example_check.yaml"


def _package_text(*, name: str) -> str | None:
    """A text file shipped inside the eval_banana package, or None when it is absent."""
    resource = resources.files("eval_banana").joinpath(name)
    if not resource.is_file():
        return None
    return resource.read_text(encoding="utf-8")


def config_template() -> str:
    """The `.eval-banana/config.toml` that `eb init` writes."""
    text = _package_text(name="templates/config.toml")
    if text is None:
        raise ConfigError("The eval_banana installation lacks templates/config.toml")
    return text


def example_check() -> str:
    """The `eval_checks/example_check.yaml` that `eb init` writes (a deterministic pass)."""
    text = _package_text(name="templates/example_check.yaml")
    if text is None:
        raise ConfigError("The eval_banana installation lacks templates/example_check.yaml")
    return text


def check_schema() -> str:
    """The published check schema; generated from the model when the file is not shipped."""
    text = _package_text(name="schemas/check.schema.json")
    if text is not None:
        return text
    from eval_banana.schemas import render, schema_builders

    return render(schema_builders()["check"]())


def run_init(*, cwd: Path, force: bool) -> list[Path]:
    """Write the config, schema and example check under `cwd`; return the paths written."""
    root = cwd.resolve()
    config, schema, example = root / CONFIG_PATH, root / SCHEMA_PATH, root / EXAMPLE_PATH
    if not force:
        # The schema is ours and always refreshed; the other two may hold the user's edits.
        for path in (config, example):
            if path.exists() or path.is_symlink():
                raise ConfigError(
                    f"Refusing to overwrite existing file: {path}",
                    file=str(path),
                    hint="pass --force to overwrite it",
                )
    contents = ((config, config_template()), (schema, check_schema()), (example, example_check()))
    written: list[Path] = []
    for path, text in contents:
        try:
            write_text_atomic(path=path, text=text)
        except OSError as exc:
            raise ConfigError(
                f"Cannot write {path}: {exc.strerror or exc}", file=str(path)
            ) from None
        written.append(path)
    return written
