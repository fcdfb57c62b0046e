"""The verdict cache (docs/incremental.md): reuse a passed or failed verdict when nothing it
depends on changed.

- `key`: the versioned, length-framed SHA-256 key; `components`: what goes into it per check;
  `verdictsettings`: the part of it the settings make, which execute.json records per result.
- `entry`: the stored document (schemas/cache-entry.schema.json) and its check.
- `store`: the folder on disk, its signed entries and kept runs; `blobs`: its content-addressed
  files and putting them back as links; `places`: where a file goes in the folder and how it
  gets there; `eviction`: least recently used entries out until the folder fits.
- `mac`: the MAC every entry and kept run carries, keyed by the cache's own secret.
- `ownwrites`: a run's record of what it wrote, and what changed in the cache without it.
- `remotetier`: the shared tier as one run uses it, made of `remotefetch` (entries fetched and
  kept locally), `remotestore` (verdicts stored, `eb cache push`) and `remoteremove` (entries a
  refresh dropped removed), over `remotestate` (the run's state, and the entries signed with a
  key it cannot verify, never written over nor removed);
  `remoteopen`: opening it from the settings; `remotedoc`: an entry as it travels;
  `remotefiles`: its files between the tiers; `remotenotes`: what the tier tells the run.
  `remoteops`: `eb cache` on the shared tier.
- `session`: one run's use of it, driven by the execute stage; `lookup`: one check's stored
  verdict looked up; `lookahead`: a forked child answering the back half of the lookups;
  `reuse`: a stored verdict made this run's result and put back in the run folder;
  `recording`: the verdicts that ran stored; `verdictentry`: a verdict that ran made into an
  entry; `finishing`: what changed without eb dropped, and the run's end; `remotewiring`: the
  shared tier opened, fetched from, kept and counted for a session; `warn`: how they warn;
  `storing`: the session the execute stage opens, and the verdicts it stores once every check
  has ended.

Nothing is imported here: the execute stage loads `session` only when the cache is on.

May import: remote, isolation, runners, stagefiles, checks, harness, datasets, settings, models,
projectstate and core.
"""
