"""The building blocks every other package stands on: errors, warnings, canonical JSON,
atomic files and digests (and the temporary files a killed writer left, `lefttemps`),
records, forked work, stems, the version, what JSON can say (`jsonvalues`), eb's own stdout
and stderr held against a reader that went away (`heldstreams`), the folder eb was started
in, deleted or not (`startfolder`), a URL's secrets (`secreturl`: masked where shown, masked
in what checks print), texts that print alike, quoted apart (`lookalike`), where a path
leads, a link loop an OSError on every Python (`realpaths`), and the MAC of eb's signed files
keyed by the cache's secret (`mac`).

May import: _version.
"""
