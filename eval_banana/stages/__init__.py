"""The pipeline's stages, one module each: config, discover, validate, guard, execute, score,
report (their names and files: stagefiles.layout).

May import: execution, incremental, calibration, remote, history, reporttext, runners, stagefiles,
checks, harness, datasets, settings, models and core.
"""
