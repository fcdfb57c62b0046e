"""Scale-out: the shard run folders of one plan, checked and merged into one run
(`eb merge`); the plan/select protocol for engines that place work themselves: `eb plan`
(`plan`) and the selection file of `eb run --select` (`selectfile`).

May import the pipeline and everything below it.
"""
