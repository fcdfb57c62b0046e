"""Scale-out: the shard run folders of one plan, checked and merged into one run
(`eb merge`).

May import the pipeline and everything below it.
"""
