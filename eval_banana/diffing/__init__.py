"""Two runs compared check by check (`eb diff`, `eb run --baseline`) and the comparison
rendered as text, Markdown or JSON.

May import stages and everything below them.
"""
