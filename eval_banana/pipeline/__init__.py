"""The stages chained: a whole run (`eb run`), a replay of a kept run, a rerun of one
stage (`eb stage`) with its results merged over the earlier ones, what is stale in a run
folder (`eb status`) and rebuilding exactly that (`eb update`).

The top of the house beside publish; scale-out and the commands call it.

May import: reporting, stages, cache, incremental, history, isolation, reporttext, runners,
stagefiles, checks, harness, datasets, settings, models, projectstate and core.
"""
