"""Every section listed in out/report.md's table of contents has a heading."""

import json
import sys
from pathlib import Path

from section_rules import REQUIRED_SECTIONS

ctx = json.loads(Path(sys.argv[1]).read_text())
report = (Path(ctx["project_root"]) / "out" / "report.md").read_text()
missing = [name for name in REQUIRED_SECTIONS if f"## {name}" not in report]
if missing:
    print(f"missing sections: {missing}")
    sys.exit(1)
print(f"all {len(REQUIRED_SECTIONS)} sections present")
