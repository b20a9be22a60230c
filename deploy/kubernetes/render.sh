#!/usr/bin/env bash
# Prints the ConfigMap (the campaign) and the Indexed Job of one sharded llmload attempt, with
# every per-attempt value filled in, ready for `kubectl apply -f -`:
#
#   deploy/kubernetes/render.sh --attempt-id ID --url URL [--shards N] [--start-at TIME]
#                               [--seed SEED] [--image REF] [--campaign FILE]
#
#   --attempt-id ID  shared by every shard; lower-case letters, digits and '-', at most 40
#                    (it names the Job, the ConfigMap and the folder on the results volume)
#   --url URL        the server under test, http:// or https://
#   --shards N       the pods, one shard each (default 4)
#   --start-at TIME  when every shard starts its schedule: an RFC 3339 instant in UTC
#                    (2026-11-30T14:00:00Z) or +DURATION from now (+90s, +2m, +1h; default
#                    +2m), turned into one instant here, so that every pod gets the same one
#   --seed SEED      the seed of the plan every shard computes (default: a fresh one)
#   --image REF      the image built from the Containerfile (default llmload:0.1.0)
#   --campaign FILE  the campaign (default: campaign.toml beside this script)
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
attempt_id="" url="" shards=4 start_at="+2m" seed="" image="llmload:0.1.0"
campaign="$here/campaign.toml"

fail() { echo "render.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || fail "$1 needs a value"
    case "$1" in
        --attempt-id) attempt_id=$2 ;;
        --url) url=$2 ;;
        --shards) shards=$2 ;;
        --start-at) start_at=$2 ;;
        --seed) seed=$2 ;;
        --image) image=$2 ;;
        --campaign) campaign=$2 ;;
        *) fail "unknown argument $1 (see the comment at the top of this script)" ;;
    esac
    shift 2
done

[ -n "$attempt_id" ] || fail "--attempt-id is required"
[ -n "$url" ] || fail "--url is required"
[[ $attempt_id =~ ^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$ ]] \
    || fail "--attempt-id '$attempt_id': lower-case letters, digits and '-', at most 40, no '-' at either end"
[[ $url =~ ^https?://[^\"\\[:space:]]+$ ]] || fail "--url '$url': an http:// or https:// URL"
[[ $shards =~ ^[1-9][0-9]{0,3}$ ]] || fail "--shards '$shards': a whole number from 1 to 9999"
[[ $image =~ ^[A-Za-z0-9][A-Za-z0-9./:@_-]*$ ]] || fail "--image '$image': an image reference"
[ -f "$campaign" ] || fail "--campaign '$campaign': no such file"
if [ -z "$seed" ]; then
    seed=$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')
fi
[[ $seed =~ ^[0-9]{1,19}$ ]] || fail "--seed '$seed': a whole number"

# +DURATION → one absolute instant, now.
if [[ $start_at =~ ^\+([0-9]+)(s|m|h)$ ]]; then
    amount=${BASH_REMATCH[1]}
    case ${BASH_REMATCH[2]} in s) unit=1 ;; m) unit=60 ;; h) unit=3600 ;; esac
    at=$(( $(date -u +%s) + amount * unit ))
    start_at=$(date -u -d "@$at" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null \
        || date -u -r "$at" +%Y-%m-%dT%H:%M:%SZ)
fi
[[ $start_at =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$ ]] \
    || fail "--start-at '$start_at': an RFC 3339 instant in UTC (…Z) or +DURATION (+90s, +2m, +1h)"

# Everything is rendered first and printed only when complete, so a failure prints no
# half manifest.
manifest=$(
    cat <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: "llmload-campaign-$attempt_id"
  labels:
    app.kubernetes.io/name: llmload
    llmload/attempt-id: "$attempt_id"
data:
  campaign.toml: |
YAML
    while IFS= read -r line || [ -n "$line" ]; do
        if [ -n "$line" ]; then printf '    %s\n' "$line"; else echo; fi
    done <"$campaign"
    echo "---"
)

# The Job: placeholders, and N where the template says 4 (completions, parallelism, SHARDS).
counts=0
previous=""
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
        "  completions: 4" | "  parallelism: 4")
            line="${line%4}$shards"; counts=$((counts + 1)) ;;
        '              value: "4"')
            if [ "$previous" = "            - name: SHARDS" ]; then
                line="              value: \"$shards\""; counts=$((counts + 1))
            fi ;;
    esac
    previous=$line
    line=${line//@ATTEMPT_ID@/"$attempt_id"}
    line=${line//@START_AT@/"$start_at"}
    line=${line//@TARGET_URL@/"$url"}
    line=${line//@SEED@/"$seed"}
    line=${line//@IMAGE@/"$image"}
    manifest+=$'\n'$line
done <"$here/job.yaml"
[ "$counts" -eq 3 ] || fail "job.yaml: expected completions, parallelism and SHARDS at 4 (found $counts of 3)"
printf '%s\n' "$manifest"
