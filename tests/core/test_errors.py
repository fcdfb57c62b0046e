"""How an error with several problems reads on the console."""

from __future__ import annotations

import errno

from eval_banana.core.errors import (
    DefinitionError,
    Problem,
    ResourceFault,
    WriteFault,
)


def test_one_problem_keeps_its_hint_on_a_line_of_its_own() -> None:
    error = DefinitionError("a.yaml: bad", hint="fix a")
    assert error.render() == "a.yaml: bad\nhint: fix a"
    assert DefinitionError("a.yaml: bad").render() == "a.yaml: bad"


def test_each_of_several_problems_has_its_hint_under_it() -> None:
    error = DefinitionError(
        "a.yaml: bad",
        hint="fix a",
        problems=(Problem(message="b.yaml: worse", hint="fix b"), Problem(message="c.yaml: odd")),
    )
    # The first problem's hint is not left at the end, where it would read as the last one's.
    assert error.render().splitlines() == [
        "a.yaml: bad",
        "  hint: fix a",
        "b.yaml: worse",
        "  hint: fix b",
        "c.yaml: odd",
    ]


def test_problems_in_a_row_that_share_a_hint_get_it_once_after_the_last() -> None:
    rows = tuple(
        Problem(
            message=f"data/rows.jsonl line {line}: case id 'bad id' holds a space",
            file="data/rows.jsonl",
            hint="give the case an id such as refund-01",
        )
        for line in range(2, 2001)
    )
    error = DefinitionError(
        "data/rows.jsonl line 1: case id 'bad id' holds a space",
        file="data/rows.jsonl",
        hint="give the case an id such as refund-01",
        problems=(
            *rows,
            Problem(message="eval_checks/x.yaml: no description", file="eval_checks/x.yaml"),
            Problem(message="eval_checks/y.yaml: bad", file="eval_checks/y.yaml", hint="fix y"),
        ),
    )
    lines = error.render().splitlines()
    # Every problem is still told, each on its own line.
    assert len([line for line in lines if line.startswith("data/rows.jsonl line ")]) == 2000
    assert lines[2000:] == [
        "  hint (the 2,000 problems above): give the case an id such as refund-01",
        "eval_checks/x.yaml: no description",
        "eval_checks/y.yaml: bad",
        "  hint: fix y",
        # What a terminal shows last: how many, and where.
        "2,002 problems in 3 files: 2,000 in data/rows.jsonl, 1 in eval_checks/x.yaml, "
        "1 in eval_checks/y.yaml",
    ]


def test_the_count_names_the_three_files_with_most_problems() -> None:
    problems = tuple(
        Problem(message=f"{name}: bad {index}", file=name)
        for name, count in (("a.yaml", 1), ("b.yaml", 3), ("c.yaml", 2), ("d.yaml", 2))
        for index in range(count)
    )
    error = DefinitionError(problems[0].message, file="a.yaml", problems=problems[1:])
    assert error.render().splitlines()[-1] == (
        "8 problems in 4 files: 3 in b.yaml, 2 in c.yaml, 2 in d.yaml, and more in 1 other file"
    )
    few = DefinitionError("a.yaml: bad", problems=problems[1:3])
    assert "problems" not in few.render()  # three problems need no count


def test_the_count_adds_each_field_error_a_check_file_s_message_lists() -> None:
    # `eb validate --json` lists a file's field errors one by one; the count must agree.
    fields = (
        Problem(message="bad id", file="two.yaml"),
        Problem(message="bad tags", file="two.yaml"),
    )
    others = tuple(Problem(message=f"c{i}.yaml: bad", file=f"c{i}.yaml") for i in range(3))
    three = Problem(message="t.yaml: 3 validation errors", file="t.yaml", errors=3)
    error = DefinitionError(
        "two.yaml: 2 validation errors",
        file="two.yaml",
        field_errors=fields,
        problems=(*others, three),
    )
    assert error.render().splitlines()[-1] == (
        "8 problems in 5 files: 3 in t.yaml, 2 in two.yaml, 1 in c0.yaml, and more in 2 other files"
    )
    # Two messages that tell five errors end with the count too.
    pair = DefinitionError(
        "two.yaml: 2 validation errors", file="two.yaml", field_errors=fields, problems=(three,)
    )
    assert pair.render().splitlines()[-1] == "5 problems in 2 files: 3 in t.yaml, 2 in two.yaml"
    same = DefinitionError(
        "two.yaml: bad", file="two.yaml", problems=(*fields, three._replace(file="two.yaml"))
    )
    assert same.render().splitlines()[-1] == "6 problems, all in two.yaml"


def test_too_many_open_files_is_a_resource_fault_wherever_eb_meets_it() -> None:
    # A helper that turns a failed write into a fault names what eb was doing; one that meets
    # it reading (a lazy import, say) names the file it was opening, never as a write.
    met_writing = WriteFault.of(
        path="runs/r/a.json", exc=OSError(errno.EMFILE, "Too many open files")
    )
    assert isinstance(met_writing, ResourceFault)
    assert met_writing.said == "Too many open files while eb was opening runs/r/a.json to write it"
    reading = OSError(errno.EMFILE, "Too many open files", "/usr/lib/python3/logging/__init__.py")
    met_reading = ResourceFault.during(exc=reading, doing="running check ok")
    assert met_reading is not None and met_reading.said == (
        "Too many open files while eb was running check ok "
        "(opening /usr/lib/python3/logging/__init__.py)"
    )
    assert met_reading.render().endswith("or lower --max-parallel-checks")
    # Any other error is none, and a write fault stays one.
    assert ResourceFault.during(exc=OSError(errno.ENOSPC, "No space"), doing="x") is None
    full = WriteFault.of(path="a.json", exc=OSError(errno.ENOSPC, "No space left on device"))
    assert type(full) is WriteFault
