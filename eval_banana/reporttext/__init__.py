"""The words every report shares: report.md's text, a family's rate and gate, and the notes
and lines the console, report.html, the step summary and `eb diff` say alike.

May import: runners, models and core.

Below the report stage (which writes report.md with it) and every output above it.
"""
