"""What eb publishes from its own declarations: the JSON Schemas (`invoke schemas`,
`python -m eval_banana.publish`) and the reference docs (`invoke docs`).

May import: cache, history, stagefiles, harness, settings, models, assertions and core.
"""
