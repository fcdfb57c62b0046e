"""`.eval-banana/calibration.json`: what `eb calibrate` measured per judge, and under which key.

The single source of `schemas/calibration.schema.json`. The guard reads it when
`[harness] require_calibration` is on: a judge may gate a run only while its record's key is
the key it would run under now.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record
from eval_banana.models.repeats import Rule

CALIBRATION_SCHEMA = "https://eval-banana.dev/schemas/calibration.schema.json"
SampleStatus = Literal["passed", "failed", "error"]


class CalibrationKey(Record):
    """What a judge's verdicts depend on: a record holds only while every part is unchanged."""

    model_config = {"extra": "forbid"}

    check_definition_sha256: str = Field(
        description="The check's definition digest (its YAML, calibration cases included).",
        pattern=r"^sha256:[0-9a-f]{64}$",
    )
    agent: str = Field(description="The agent CLI that judged ([harness] agent).")
    model: str | None = Field(description="The model in effect (the check's, else [harness]).")
    reasoning_effort: str | None = Field(description="[harness] reasoning_effort in effect.")
    command_template: str = Field(
        description="The agent's command line as JSON, with the prompt as '{prompt}'."
    )
    prompt_version: str = Field(description="The version of the prompt eb builds for judges.")
    agent_variables_sha256: str | None = Field(
        default=None,
        description="SHA-256 of the variables the config sets for the agent, as written: the "
        "agent's provider_env (a {env:NAME} placeholder by its text) and fixed_env, and "
        "[harness.env]. Only the digest is kept, so no value of them is in the record. Null "
        "in a record of an older eb, which is refused as calibrated under another key.",
        pattern=r"^sha256:[0-9a-f]{64}$",
    )
    output_dialect: str | None = Field(
        default=None,
        description="How the agent's answer is read (its output_dialect). Null in a record "
        "of an older eb, which is refused as calibrated under another key.",
    )


class CaseSample(Record):
    """One run of the judge on one case."""

    model_config = {"extra": "forbid"}

    sample: int = Field(ge=1, description="1-based sample number.")
    status: SampleStatus = Field(description="What the judge answered (an error agrees never).")
    agreed: bool = Field(description="Whether the answer matched the case's label.")
    reason: str | None = Field(description="The judge's reason, or the error's detail.")
    evidence: dict[str, str] = Field(
        default_factory=dict,
        description="Evidence files of this sample, relative to the calibration run folder.",
    )


class CaseOutcome(Record):
    """One labelled case and every sample the judge gave on it."""

    model_config = {"extra": "forbid"}

    name: str
    expect: Literal["pass", "fail"]
    agreed: bool = Field(
        description="Whether every verdict on the case matched the label: each verdict decided "
        "by the judge's aggregate rule from samples_per_verdict of its samples, in order."
    )
    samples: list[CaseSample]


class JudgeCalibration(Record):
    """One judge's figures and the key they were measured under."""

    model_config = {"extra": "forbid"}

    check_id: str
    source_path: str = Field(description="The check file, as the plan names it.")
    key: CalibrationKey
    measured_at: str = Field(description="When the calibration ended (UTC, ISO 8601).")
    run_dir: str = Field(description="The calibration run folder holding the evidence.")
    samples_per_case: int = Field(ge=1)
    cases: int = Field(ge=1, description="How many cases the judge was run on.")
    cases_agreed: int = Field(ge=0, description="Cases on which every verdict matched the label.")
    agreement: float = Field(
        ge=0.0, le=1.0, description="Verdicts that matched their label / all verdicts."
    )
    true_pass_rate: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Verdicts on known-good cases (expect: pass) that passed / all such "
        "verdicts; null when there is no such case.",
    )
    true_fail_rate: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Verdicts on known-bad cases (expect: fail) that failed / all such "
        "verdicts; null when there is no such case.",
    )
    aggregate: Rule | None = Field(
        default=None,
        description="The judge's aggregate rule, which decides a verdict from its samples as "
        "a run decides the check. Null in a record of an older eb, which the gate refuses.",
    )
    samples_per_verdict: int | None = Field(
        default=None,
        ge=1,
        description="How many samples make one verdict: the judge's own repeats (a run takes "
        "that many of it), else 1. Null in a record of an older eb, which the gate refuses.",
    )
    sample_agreement: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Samples that matched their label / all samples, each sample taken alone: "
        "how steady the judge is. Null in a record of an older eb.",
    )
    sample_true_pass_rate: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Samples on known-good cases the judge passed / all such samples; null "
        "when there is no such case (or in a record of an older eb).",
    )
    sample_true_fail_rate: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Samples on known-bad cases the judge failed / all such samples; null "
        "when there is no such case (or in a record of an older eb).",
    )
    outcomes: list[CaseOutcome]


class CalibrationDoc(Record):
    """The whole file: one entry per calibrated judge, by check id."""

    model_config = {"extra": "forbid"}

    schema_uri: str = Field(default=CALIBRATION_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    tool_version: str
    updated_at: str
    checks: dict[str, JudgeCalibration] = Field(
        default_factory=dict, description="Check id -> its latest calibration."
    )
