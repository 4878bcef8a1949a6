#!/usr/bin/env bash
# Runs the seeded fault harness (tests/fault_harness.sh) with TRIALS trials
# of each fault and prints the table of docs/reliability.md ("Faults"):
# per fault the trials, the longest time from the fault until every rank
# had exited, whether the culprit rank was named, the data lost, and how
# many resumes (train --resume, or --max-restarts) reproduced the
# uninterrupted run's final loss; then the same as JSON.
# Usage: scripts/reliability_table.sh [PATH/TO/pipewright]
#   TRIALS=N (default 5)  SEED=N (default 1)  JSON=FILE (default: stdout)
#   FAULTS="…" (default: the harness's)  RESULTS=FILE: keep the harness's
#   per-trial lines there  FROM=FILE: only tabulate such a file (no run)
# Exits 1 when the harness reported a failed check (the table still prints).
set -uo pipefail
cd "$(dirname "$0")/.."
PW=${1:-build/src/cli/pipewright}
TRIALS=${TRIALS:-5}
SEED=${SEED:-1}
harness_rc=0
if [ -n "${FROM:-}" ]; then
  results=$FROM
else
  results=${RESULTS:-$(mktemp)}
  [ -n "${RESULTS:-}" ] || trap 'rm -f "$results"' EXIT
  : >"$results"
  RESULTS=$results TRIALS=$TRIALS SEED=$SEED tests/fault_harness.sh "$PW" >&2
  harness_rc=$?
fi

json=$(jq -R -s '
  split("\n") | map(select(length > 0) | split("\t")
    | {fault: .[0], seed: (.[1] | tonumber), rank: .[2], exit_s: .[3],
       culprit: .[4], lost: .[5], reproduced: .[6]})
  | group_by(.fault) | map({
      fault: .[0].fault,
      trials: length,
      max_exit_s: (map(select(.exit_s != "-") | .exit_s | tonumber) | max),
      culprit_named: (if all(.culprit == "n/a") then "n/a"
                      else "\(map(select(.culprit == "yes")) | length)/\(map(select(.culprit != "n/a")) | length)" end),
      data_lost: (map(select(.lost != "none") | .lost) | if length == 0 then "none" else join(", ") end),
      reproduced: (if all(.reproduced == "n/a") then "n/a"
                   else "\(map(select(.reproduced == "yes")) | length)/\(map(select(.reproduced != "n/a")) | length)" end),
      seeds: map(.seed)})
  | sort_by(.fault as $f | ["train-kill", "infer-kill", "train-stop", "infer-stop", "ckpt-crash",
                            "train-restart", "link-down"] | index($f) // 99)' "$results")

echo "| fault | trials | max time to exit | culprit named | data lost | resumes that reproduced the loss |"
echo "|---|---|---|---|---|---|"
echo "$json" | jq -r '.[] | "| \(.fault) | \(.trials) | \(if .max_exit_s == null then "— (killed at once)" else "\(.max_exit_s) s" end) | \(.culprit_named) | \(.data_lost) | \(.reproduced) |"'
if [ -n "${JSON:-}" ]; then
  echo "$json" >"$JSON"
else
  echo
  echo "$json"
fi
exit "$harness_rc"
