"""Fail-closed path assertions on JSON/YAML data (the `assertions` check type).

May import core only: models build on its operators and paths.
"""

from eval_banana.assertions.evaluate import (
    MAX_ARTIFACT_BYTES,
    AssertionOutcome,
    LoadedArtifact,
    evaluate_all,
    evaluate_assertion,
    fail_all,
    load_artifact,
    summarize,
)
from eval_banana.assertions.operators import (
    MAX_MATCH_INPUT_BYTES,
    MAX_PATTERN_CHARS,
    OPERATORS,
    PatternError,
    json_equal,
)
from eval_banana.assertions.paths import (
    PATH_PATTERN,
    ArtifactPathError,
    PathSyntaxError,
    check_artifact_path,
    parse_path,
    render_path,
)

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_MATCH_INPUT_BYTES",
    "MAX_PATTERN_CHARS",
    "OPERATORS",
    "PATH_PATTERN",
    "ArtifactPathError",
    "AssertionOutcome",
    "LoadedArtifact",
    "PathSyntaxError",
    "PatternError",
    "check_artifact_path",
    "evaluate_all",
    "evaluate_assertion",
    "fail_all",
    "json_equal",
    "load_artifact",
    "parse_path",
    "render_path",
    "summarize",
]
