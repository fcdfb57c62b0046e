"""One check file from bytes to a validated definition and its digest: the loader, the
fast path, the error wording, YAML positions, loading the files a plan is made of (all of them,
or those an id or pattern names) and expanding them into units, a family into its cases
(`units`), selection (-k, --tag, --check-id, --shard, --select, --subset), a unit as the plan
lists it (`planned`), problems as one typed error (`problemerrors`) and the files a check reads
(inputs).

May import: datasets, settings, models, assertions, projectstate and core.
"""
