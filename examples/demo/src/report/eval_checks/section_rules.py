"""A sibling module: script_path checks can import their neighbours."""

REQUIRED_SECTIONS = ("Summary", "Results", "Next steps")
