"""One check file from bytes to a validated definition and its digest: the loader, the
fast path, the error wording, YAML positions, selection (-k, --tag, --check-id, --shard,
--select) and the files a check reads (inputs).

May import core, models, projectstate, assertions and settings.
"""
