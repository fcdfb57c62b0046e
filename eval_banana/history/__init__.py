"""Memory across runs (docs/history.md): one immutable record per run in the history folder.

- `record`: the record's model (schemas/history-record.schema.json).
- `build`: a record from a finished run's report; `gitstate`: the commit it ran on.
- `store`: writing, pruning and importing record files; `read`: loading them back.
- `durations`: what a check is expected to take and cost, from its recorded runs.
- `recent`: the newest runs, and the order `eb run` starts checks in by them (longest first).
- `balance`: `--shard K/N --balance history`, a split by recorded durations.
- `summary` and `render`: what `eb history` shows; `merges`: each run counted once, a merge
  for its shards.
- `trend`: what the pictures draw (the history page's strips, report.html's sparklines).

May import: stagefiles, checks, harness, settings, models, projectstate and core.

The pipeline, the merge, the reports and the commands call it, never the other way round.
"""
