#!/usr/bin/env bash
# Property-based fuzzing of llmload's decoders (crates/llmload/tests/it/fuzz/) for many more cases
# than `cargo test` runs: arbitrary bytes, split at arbitrary points, through the SSE decoder, the
# APIs' event parsers, the HTTP/1.1 head parser and body decoder, the requests.jsonl reader (its
# impossible records included) and the readers of other tools' result files (reconcile's).
# PROPTEST_CASES sets the cases per property (default 20000); other PROPTEST_* variables pass
# through, and arguments go to the test harness (a test name filter, --nocapture). Tests marked
# #[ignore] are known bugs, left out. A failure is saved by proptest under
# crates/llmload/tests/proptest-regressions/fuzz/ (one file per test file) and replayed first on every later run.
set -euo pipefail
cd "$(dirname "$0")/.."

export PROPTEST_CASES="${PROPTEST_CASES:-20000}"
command=(cargo test --release -p llmload --test it -- fuzz:: "$@")
echo "fuzz.sh: PROPTEST_CASES=$PROPTEST_CASES ${command[*]}" >&2
start=$SECONDS
"${command[@]}"
echo "fuzz.sh: PROPTEST_CASES=$PROPTEST_CASES ${command[*]}: passed in $((SECONDS - start)) s" >&2
