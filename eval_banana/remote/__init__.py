"""The remote tier of the verdict cache (docs/shared-cache.md): storage shared by CI runners.

- `backend`: the interface every remote speaks (get, put, head, list, delete of entries by
  key and blobs by digest), its errors, and `open_backend`, which picks one by URL.
- `folder`, `s3`, `http`: a path or file:// URL, an S3 bucket (boto3, the `s3` extra), a
  plain HTTP cache (bazel-remote, nginx or WebDAV: GET/PUT/HEAD of ac/<key> and cas/<sha256>).
- `signing`: the HMAC-SHA-256 signature entries carry on the remote, keyed by
  EVAL_BANANA_CACHE_SIGNING_KEY (never by the local cache's secret).
- `digesting`: a sink that hashes what a download streams into it, and refuses past a size.
- `guarded`: requests with counters and a circuit breaker, so a remote that is down or slow
  costs a run at most about one timeout.

Knows nothing of entries' contents: the cache package (above) decides what is stored.

May import: core.
"""
