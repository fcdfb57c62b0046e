"""Fail-closed path assertions on JSON/YAML data (the `assertions` check type).

May import: core.

Models build on its operators and paths. Import from the modules (`assertions.paths`,
`assertions.operators`, `assertions.evaluate`): this package imports none of them, so what needs a
path's syntax alone (every check file's validation) does not load the evaluator.
"""
