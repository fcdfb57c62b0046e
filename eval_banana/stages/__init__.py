"""The pipeline's stages, one module each: config, discover, validate, guard, execute, score,
report (their names and files: stagefiles.layout).

May import every capability package below them; never the pipeline, scale-out or commands.
"""
