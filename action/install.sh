#!/usr/bin/env bash
# The eval_banana action's install: the eval_banana of the action's own ref (so `@v1` pins the
# eb that runs), or the pip requirement given as the `install` input.
set -euo pipefail
spec="${EB_INSTALL:-}"
if [ -z "$spec" ]; then
  spec="${EB_ACTION_ROOT:?EB_ACTION_ROOT: the folder of the action repository}"
fi
python -m pip install --disable-pip-version-check --quiet "$spec"
eb --version
