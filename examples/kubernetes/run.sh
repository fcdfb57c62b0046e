#!/bin/sh
# Start the shards, wait for them, then the merge; exits 0 only when the merged verdict passes.
# Kubernetes has no "start this Job after that one", so the ordering lives here (or in the
# pipeline that calls kubectl). Usage: sh examples/kubernetes/run.sh [NAMESPACE]
set -eu
here=$(dirname "$0")
ns=${1:-default}

# Wait until the Job is Complete (return 0) or Failed (return 1); `kubectl wait` waits for
# one condition only, and a failed Job never becomes complete.
finished() {
  while :; do
    state=$(kubectl -n "$ns" get "job/$1" \
      -o 'jsonpath={.status.conditions[?(@.status=="True")].type}')
    case " $state " in
      *" Complete "*) return 0 ;;
      *" Failed "*) return 1 ;;
    esac
    sleep 10
  done
}

kubectl -n "$ns" apply -f "$here/volume.yaml"
kubectl -n "$ns" delete job eval-shards eval-merge --ignore-not-found
kubectl -n "$ns" apply -f "$here/shards-job.yaml"
# A shard that fails for good (exit 2, a setup error) fails the Job: no verdict to merge.
finished eval-shards || { echo "eval-shards failed: see kubectl logs" >&2; exit 2; }
kubectl -n "$ns" apply -f "$here/merge-job.yaml"
status=0
finished eval-merge || status=1
kubectl -n "$ns" logs job/eval-merge
exit "$status"
