"""The building blocks every other package stands on: errors, warnings, canonical JSON,
atomic files and digests, records, forked work, stems, the version.

Imports nothing else of eval_banana.
"""
