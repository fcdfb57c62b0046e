"""Where a family's rows come from: its own `cases:` list and the files `cases_from` names (a
path, or a glob that looks where discovery looks), each row kept with where it is."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.casesfrom import dataset_paths
from eval_banana.datasets.globwalk import Skipped, is_glob, relative
from eval_banana.datasets.reading import read_rows
from eval_banana.datasets.rows import SUFFIXES, ItemLines, Row, TooManyRows
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.origin import setting_origin

_MAX_CASES = "[core] max_cases"


class CaseLimit(NamedTuple):
    """`[core] max_cases`, with where it was set in the words of a message about it."""

    limit: int
    setting: str = _MAX_CASES  # what the message names: the variable when that set it
    raise_at: str = _MAX_CASES  # where the hint says to raise it

    @classmethod
    def of(cls, *, config: ConfigDoc) -> CaseLimit:
        """The run's limit, named where it was set (EVAL_BANANA_MAX_CASES is no key of the
        config file: a user who set it looks for it in the environment)."""
        origin = setting_origin(
            name="core.max_cases", sources=config.sources, config_file=config.config_file
        )
        return cls(
            limit=config.settings.core.max_cases,
            setting=origin.named if origin.source == "env" else _MAX_CASES,
            raise_at=origin.named,
        )


def dataset_rows(
    *,
    definition: dict[str, Any],
    root: Path,
    check_file: str,
    skipped: Skipped,
    problems: list[DefinitionError],
    max_cases: CaseLimit,
    check_text: str | None,
) -> tuple[list[Row], list[str]]:
    inline = definition.get("cases") or []
    # The check file's own items, found in its text only when one of them has a problem.
    lines = ItemLines(check_text, under="cases") if check_text and inline else None
    # Every value YAML 1.1 reads otherwise is a boolean or a number once loaded, or text YAML
    # 1.2 reads as a number: other cases need no second reading of the check file.
    if check_text and _may_read_otherwise(inline):
        _refuse_ambiguous_scalars(text=check_text, check_file=check_file, problems=problems)
    rows = [
        Row(
            value=value,
            file=check_file,
            where=f"cases item {index + 1}",
            line=None,
            inline_index=index,
            item_index=index + 1,
            item_lines=lines,
        )
        for index, value in enumerate(inline)
    ]
    files: list[str] = []
    pattern = definition.get("cases_from")
    if pattern is not None:
        try:
            paths = dataset_paths(
                pattern=str(pattern), root=root, check_file=check_file, skipped=skipped
            )
        except DefinitionError as exc:
            problems.append(exc)
            return rows, files
        # The suffix a glob should have named, worked out once: a glob over a folder of
        # thousands of other files must not rescan them all for each.
        narrowed = _narrowed(pattern=str(pattern), paths=paths) if is_glob(str(pattern)) else None
        for path in paths:
            file = relative(path=path, root=root)
            files.append(file)
            if narrowed is not None and path.suffix.lower() not in SUFFIXES:
                problems.append(
                    _not_a_dataset(
                        pattern=str(pattern), file=file, narrowed=narrowed, check_file=check_file
                    )
                )
                continue
            try:
                rows.extend(
                    read_rows(
                        path=path, file=file, problems=problems, limit=max_cases.limit - len(rows)
                    )
                )
            except DefinitionError as exc:
                problems.append(exc)
            except TooManyRows as exc:
                # Past the limit no more rows are made, nor files read: the family is refused.
                problems.append(
                    too_many(
                        family=str(definition["id"]),
                        check_file=check_file,
                        count=len(rows) + exc.counted,
                        max_cases=max_cases,
                        at_least=len(paths) > len(files),
                    )
                )
                return [], files
    return rows, files


def _may_read_otherwise(value: object) -> bool:
    """Whether loaded YAML `value` holds what YAML 1.1 may have read otherwise than YAML 1.2:
    a boolean, a number, or text YAML 1.2 reads as a number (`1e3`, `0o755`)."""
    from eval_banana.datasets.yamlrows import yaml12_number

    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) in (bool, int, float):
            return True
        if type(item) is str and yaml12_number(item) is not None:
            return True
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return False


def _refuse_ambiguous_scalars(
    *, text: str, check_file: str, problems: list[DefinitionError]
) -> None:
    """The check file's own `cases:` are rows like a dataset file's: a plain word or number
    YAML 1.1 reads otherwise than YAML 1.2 is told there too (datasets/yamlrows.py)."""
    from eval_banana.datasets.yamlrows import ambiguous_problems, ambiguous_scalars_under

    found = ambiguous_scalars_under(text, key="cases")
    problems.extend(
        ambiguous_problems(
            found=found,
            file=check_file,
            at=lambda line: f"{check_file} cases (line {line})",
            field_path="cases",
        )
    )


def too_many(
    *, family: str, check_file: str, count: int, max_cases: CaseLimit, at_least: bool = False
) -> DefinitionError:
    """A family of more cases than `[core] max_cases`; `at_least`: the datasets were not all
    counted (reading stopped at the one that went past the limit)."""
    return DefinitionError(
        f"Family '{family}' in {check_file} has {'at least ' if at_least else ''}{count:,} "
        f"cases, more than {max_cases.setting} ({max_cases.limit:,})",
        file=check_file,
        field_path="cases_from",
        hint=f"split the dataset, narrow cases_from, or raise {max_cases.raise_at}",
    )


def _not_a_dataset(*, pattern: str, file: str, narrowed: str, check_file: str) -> DefinitionError:
    """A file a `cases_from` glob matched that is no dataset (a README beside the rows): the
    glob in the check file is what to fix, so the error is told there, with the glob narrowed
    to the datasets' kind."""
    return DefinitionError(
        f"cases_from {pattern!r} in {check_file} matches {file}, which is not a dataset "
        "(.jsonl, .json, .yaml, .yml or .csv)",
        file=check_file,
        field_path="cases_from",
        hint=f"narrow the glob to the dataset files, e.g. cases_from: {narrowed!r}",
    )


def _narrowed(*, pattern: str, paths: list[Path]) -> str:
    """`pattern` matching only files of the kind most of the datasets it matched are (JSONL
    when none is): its last part ends in `*<suffix>`, spelt as those files spell it (a glob
    is matched case by case: `*.jsonl` would miss `rows.JSONL` on Linux)."""
    kinds = Counter(path.suffix for path in paths if path.suffix.lower() in SUFFIXES)
    kind = kinds.most_common(1)[0][0] if kinds else ".jsonl"
    folder, _, last = pattern.rstrip("/").rpartition("/")
    if last == "**":
        last = f"**/*{kind}"
    elif last.endswith("*") and "." not in last:
        last += kind  # `q*` -> `q*.jsonl`
    else:
        last = f"*{kind}"  # `*.*` -> `*.jsonl`
    return f"{folder}/{last}" if folder else last
