"""The shared second tier of the verdict cache as one run uses it: fetching entries before
checks start, storing new verdicts once they end, and removing those a refresh dropped
(docs/shared-cache.md).

An entry travels as a remote document (cache/remotedoc.py). A fetched entry is checked as a
local one is (schema, key, check) plus its signature and every file's digest, and only then
kept in the local folder, signed with the local MAC; the lookups that follow read it there
(or, while another run's checks execute with that folder, from where it is held meanwhile). A
remote entry that fails any of these is a miss, with a warning and a counter saying why, never
an error or a verdict. A run never writes over, nor removes, an entry signed with a key it
cannot verify.
"""

from __future__ import annotations

from eval_banana.cache.remotefetch import TierFetching
from eval_banana.cache.remoteremove import TierRemoving
from eval_banana.cache.remotestore import TierStoring


class RemoteTier(TierFetching, TierStoring, TierRemoving):
    """The remote as one run uses it: what it fetched, what it stores, and its counters."""
