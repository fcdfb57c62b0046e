"""Two runs compared check by check (`eb diff`, `eb run --baseline`) and the comparison
rendered as text, Markdown or JSON.

May import: reporttext, runners, stagefiles, checks, settings, models and core.
"""
