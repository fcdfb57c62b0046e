"""The state of a project's files, identified by git blob ids (reusable, cache-agnostic).

- `reading.read_project_state`: the file set and each file's id, as git lists them
  (`gitlisting`: git's index where it can, hashing only what differs from it) or by a walk of
  the folder (`walking`), taking over git commands `prefetch.prefetched_state` started early.
- `state.ProjectState`: what a read found; its `digest()`, `digest_of` a subset, `select` by
  globs, and the `diff` between two states.
- `prefixes`: paths against the project root and the prefixes a read is limited to.
- `conversion`: the files git converts (line endings, filters), which count by their bytes.
- `revision.changes_since`: what differs between a git revision and the work tree.
- `patterns.InputPatterns` / `patterns.pattern_problem`: the glob rules of a check's `inputs:`.
- `blobs.blob_id` / `blobs.file_blob_id` / `blobs.file_identity`: git's blob id of some bytes
  or of a file, and a file's mode as git records it.
- `links`: the symbolic links on a path's way, which the state never follows into a folder.

The package imports nothing itself: the check models need only `patterns`, which is
standard library only, and must not pay for the git plumbing.

May import: core.
"""
