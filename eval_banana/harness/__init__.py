"""Agent CLIs as judges: templates (data), command and environment assembly, the prompt, and
the streaming reader that finds a verdict in what an agent prints.

May import: models and core.
"""
