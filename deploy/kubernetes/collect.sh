#!/usr/bin/env bash
# Collects the shard folders of one attempt and merges them with `llmload merge`.
#
#   deploy/kubernetes/collect.sh ATTEMPT_ID [--dest DIR] [--namespace NS] [--wait DURATION]
#       waits (at most --wait, default 2h) for the Job llmload-ATTEMPT_ID to finish, copies
#       /results/ATTEMPT_ID off the results volume through a short-lived helper pod (the
#       llmload image has no shell and no tar), then merges as below
#   deploy/kubernetes/collect.sh --local DIR --shards N [--dest DIR]
#       merges the shard folders under DIR (DIR/shard-I/CAMPAIGN/ID-shard-I-of-N, as the
#       Job's --out=/results/ATTEMPT_ID/shard-I writes them), without a cluster
#
# Each shard must have exactly one attempt folder, DIR/shard-I/CAMPAIGN/ID-shard-I-of-N. Two
# come only from two runs under one attempt id with different campaign names (a run under the
# same name is refused, its folder existing): the script lists them and merges nothing, since
# llmload merge refuses two folders of one shard; merge the one you mean by hand. A shard with
# none (it never got as far as creating one) is left out, with a warning, and the merged
# attempt says how many of the N shards it holds.
#
# The exit code is llmload merge's (0 every shard completed, 3 one missing or incomplete, 2
# refused), or 2 when this script cannot go on.
#
# The merged attempt goes to DEST/merged/CAMPAIGN/ATTEMPT_ID (DEST defaults to
# ./llmload-results/ATTEMPT_ID; with --local, to DIR), the shards copied off the volume to
# DEST/ATTEMPT_ID.
# LLMLOAD names the llmload binary (default: llmload on the PATH).
set -euo pipefail

fail() { echo "collect.sh: $*" >&2; exit 2; }

attempt_id="" local_dir="" shards="" dest="" namespace="" wait_for="2h"
while [ $# -gt 0 ]; do
    case "$1" in
        --local | --shards | --dest | --namespace | --wait)
            [ $# -ge 2 ] || fail "$1 needs a value" ;;
    esac
    case "$1" in
        --local) local_dir=$2; shift 2 ;;
        --shards) shards=$2; shift 2 ;;
        --dest) dest=$2; shift 2 ;;
        --namespace) namespace=$2; shift 2 ;;
        --wait) wait_for=$2; shift 2 ;;
        -*) fail "unknown argument $1 (see the comment at the top of this script)" ;;
        *) [ -z "$attempt_id" ] || fail "one attempt id, not '$1' too"; attempt_id=$1; shift ;;
    esac
done

# The shard folders under $1 (N shards), merged into $2.
merge_shards() {
    local root=$1 out=$2 i folders=() missing=() found
    for ((i = 0; i < shards; i++)); do
        found=()
        if [ -d "$root/shard-$i" ]; then
            while IFS= read -r file; do
                found+=("$(dirname "$file")")
            done < <(find "$root/shard-$i" -mindepth 3 -maxdepth 3 -name campaign.json | sort)
        fi
        case ${#found[@]} in
            0) missing+=("$i") ;;
            1) folders+=("${found[0]}") ;;
            *) fail "shard $i has ${#found[@]} attempt folders (it ran more than once): ${found[*]}; llmload merge takes one folder per shard, so merge the shards by hand with the one you mean" ;;
        esac
    done
    [ ${#folders[@]} -gt 0 ] || fail "no shard folder under $root/shard-0 … shard-$((shards - 1))"
    if [ ${#missing[@]} -gt 0 ]; then
        echo "collect.sh: no folder for shard ${missing[*]}: merging ${#folders[@]} of $shards shards" >&2
    fi
    "${LLMLOAD:-llmload}" merge "${folders[@]}" --out "$out"
}

if [ -n "$local_dir" ]; then
    [ -z "$attempt_id" ] || fail "--local takes no attempt id"
    [[ $shards =~ ^[1-9][0-9]{0,3}$ ]] || fail "--local needs --shards N (1 to 9999)"
    [ -d "$local_dir" ] || fail "--local '$local_dir': no such folder"
    merge_shards "$local_dir" "${dest:-$local_dir}/merged"
    exit
fi

[ -n "$attempt_id" ] || fail "an attempt id, or --local DIR --shards N"
[[ $attempt_id =~ ^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$ ]] || fail "attempt id '$attempt_id': as render.sh --attempt-id takes it"
[[ $wait_for =~ ^([0-9]+)(s|m|h)$ ]] || fail "--wait '$wait_for': a duration such as 90s, 30m, 2h"
case ${BASH_REMATCH[2]} in s) unit=1 ;; m) unit=60 ;; h) unit=3600 ;; esac
deadline=$(( $(date +%s) + BASH_REMATCH[1] * unit ))
dest=${dest:-llmload-results/$attempt_id}
kube=(kubectl)
[ -z "$namespace" ] || kube+=(--namespace "$namespace")
job="llmload-$attempt_id"
helper="llmload-collect-$attempt_id"

shards=$("${kube[@]}" get job "$job" -o 'jsonpath={.spec.completions}')
echo "collect.sh: waiting for job/$job ($shards shards) to finish" >&2
until "${kube[@]}" get job "$job" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}' \
    | grep -qwE 'Complete|Failed'; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "job/$job has not finished within $wait_for"
    sleep 10
done
"${kube[@]}" get job "$job" -o 'jsonpath=completed indexes: {.status.completedIndexes}{"\n"}failed indexes: {.status.failedIndexes}{"\n"}' >&2

# A helper pod that mounts the results volume read-only, long enough to copy one folder.
"${kube[@]}" apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: "$helper"
  labels:
    app.kubernetes.io/name: llmload
    llmload/attempt-id: "$attempt_id"
spec:
  restartPolicy: Never
  activeDeadlineSeconds: 3600
  automountServiceAccountToken: false
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
  containers:
    - name: collect
      image: docker.io/library/busybox:1.37
      command: ["sleep", "3600"]
      volumeMounts:
        - name: results
          mountPath: /results
          readOnly: true
  volumes:
    - name: results
      persistentVolumeClaim:
        claimName: llmload-results
        readOnly: true
YAML
trap '"${kube[@]}" delete pod "$helper" --wait=false >/dev/null 2>&1 || true' EXIT
"${kube[@]}" wait --for=condition=Ready "pod/$helper" --timeout=300s >&2
mkdir -p "$dest"
"${kube[@]}" exec "$helper" -- tar cf - -C /results "$attempt_id" | tar xf - -C "$dest"
merge_shards "$dest/$attempt_id" "$dest/merged"
