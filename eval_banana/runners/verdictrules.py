"""The version of the rules by which eb turns a check's run into its verdict, per check type.

A verdict in the cache was reached under the rules of the eb that stored it. Each version below
is part of its type's cache key (cache/components.py), so raising one turns every cached verdict
of that type into a miss once, after upgrading, rather than reusing a pass today's eb would not
give. Raise it with any change that can give a check another status or reason from the same
run: how an exit status is read (a `sys.exit(256)` the system would read as 0), what an
assertion holds on, when a control counts as a caught defect, which object of a judge's answer
is its verdict. A judge's prompt has a version of its own (`harness.prompt.PROMPT_VERSION`),
which its key holds too and calibration records name.
"""

from __future__ import annotations

# 2: a script's exit code the system folds to 0 fails; a reason is what the script said last.
DETERMINISTIC_RULES = "deterministic-2"
# 2: a control with an assertion not evaluated is an error, never a caught defect.
# 3: a `%YAML 1.2` artifact is read by YAML 1.2's rules (`NO` is text); a YAML artifact with no
# document (only comments) is empty, so a control on it is an error; a YAML artifact over 8 MiB
# and a whole number of more than 4,300 digits in any base are unusable.
# 4: a YAML artifact `--- !!null` is null, not empty; a `!!set`, `!!omap`, `!!pairs` or
# `!!binary` value, and under `%YAML 1.2` a tagged value 1.2 does not read so (`!!int 1_000`),
# make the artifact unusable.
ASSERTIONS_RULES = "assertions-4"
# 2: a malformed last verdict (`{"score": false}`, a key twice) ends the search, so an earlier
# draft no longer passes in its place.
JUDGE_RULES = "judge-2"
