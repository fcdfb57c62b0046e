"""Running one plan's checks for the execute stage: each check through its runner (the one
place an exception becomes a check's error), stored verdicts reused first, the rest on a pool
of threads in their turn, samples decided, maxfail, the fuses and the watch on eb's state.

May import: cache, history, isolation, sampling, runners, stagefiles, checks, settings, models,
assertions and core.

The execute stage calls it.
"""
