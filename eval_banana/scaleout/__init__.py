"""Scale-out: the shard run folders of one plan, checked (`shardset`) and merged into one run
(`eb merge`: `merge`, with `mergedstages` and `shardevidence`); the plan/select protocol for
engines that place work themselves: `eb plan` (`plan`) and the selection file of
`eb run --select` (`selectfile`).

May import: pipeline, reporting, stages, cache, history, isolation, stagefiles, checks, harness,
settings, models, projectstate and core.
"""
