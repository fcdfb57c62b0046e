"""Scale-out: the shard run folders of one plan, checked (`shardset`) and merged into one run
(`eb merge`: `merge`, with `mergedstages` and `shardevidence`); the plan/select protocol for
engines that place work themselves: `eb plan` (`plan`) and the selection file of
`eb run --select` (`selectfile`).

May import the pipeline and everything below it.
"""
