"""What eb publishes from its own declarations: the JSON Schemas (`invoke schemas`,
`python -m eval_banana.publish`) and the reference docs (`invoke docs`).

May import stages and everything below them.
"""
