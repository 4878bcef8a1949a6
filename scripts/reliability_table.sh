#!/usr/bin/env bash
# The tables of docs/reliability.md, from one command:
#   1. faults: the seeded fault harness (tests/fault_harness.sh), TRIALS
#      trials of each fault — per fault the trials, the longest time from
#      the fault until every rank had exited, whether the culprit rank was
#      named, the data lost, and how many resumes (train --resume,
#      --max-restarts, or a torchrun-style rerun with --resume auto)
#      reproduced the uninterrupted run's final loss;
#   2. fuzzing: scripts/fuzz.sh, FUZZ_SECONDS of libFuzzer per parser —
#      executions, crashes and hangs found;
#   3. side tasks that misbehave: bench/misbehaving_tasks.sh — the in-run
#      slowdown of training beside each misbehaving task, and what was
#      reported.
# Then all of it as one JSON object {"faults": [...], "fuzz": [...],
# "side_tasks": [...]}. A part that was skipped is null there.
#
# Usage: scripts/reliability_table.sh [PATH/TO/pipewright]
#   TRIALS=N (default 5)  SEED=N (default 1)  FAULTS="…" (default: the harness's)
#   FUZZ_SECONDS=N per parser (default 60; 0 skips fuzzing; needs clang)
#   TASKS=0 skips the side tasks (STEPS, CASES: bench/misbehaving_tasks.sh's)
#   JSON=FILE: write the JSON there instead of stdout
#   RESULTS=FILE: keep the harness's per-trial lines there
#   FROM=FILE: tabulate such a file instead of running the harness
# About 20 minutes with the defaults on a 2-core machine. Run it on a quiet
# machine: the side-task slowdowns are timings.
# Exits 1 when any part failed (a failed fault check, a crash or hang found
# by the fuzzer, training that did not finish beside a task); the tables
# still print.
set -uo pipefail
cd "$(dirname "$0")/.."
PW=${1:-build/src/cli/pipewright}
TRIALS=${TRIALS:-5}
SEED=${SEED:-1}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
TASKS=${TASKS:-1}
status=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# --- 1. faults ---
if [ -n "${FROM:-}" ]; then
  results=$FROM
else
  results=${RESULTS:-$scratch/faults.tsv}
  : >"$results"
  echo "reliability_table: faults ($TRIALS trial(s) each, SEED=$SEED) ..." >&2
  RESULTS=$results TRIALS=$TRIALS SEED=$SEED tests/fault_harness.sh "$PW" >&2 || status=1
fi
faults=$(jq -R -s '
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
                            "train-restart", "link-down", "host-restart"] | index($f) // 99)' "$results")

# --- 2. fuzzing ---
fuzz=null
if [ "$FUZZ_SECONDS" -gt 0 ]; then
  echo "reliability_table: fuzzing ($FUZZ_SECONDS s per parser) ..." >&2
  if scripts/fuzz.sh "$FUZZ_SECONDS" --json >"$scratch/fuzz.out"; then :; else status=1; fi
  fuzz=$(sed -n '/^\[/,$p' "$scratch/fuzz.out" | jq -c '.' 2>/dev/null)
  [ -n "$fuzz" ] || { fuzz=null; status=1; echo "reliability_table: scripts/fuzz.sh gave no figures" >&2; }
fi

# --- 3. side tasks that misbehave ---
tasks=null
if [ "$TASKS" != 0 ]; then
  echo "reliability_table: side tasks that misbehave ..." >&2
  JSON=1 bench/misbehaving_tasks.sh "$PW" >"$scratch/tasks.out" || status=1
  tasks=$(grep '^{' "$scratch/tasks.out" | jq -s '.' 2>/dev/null)
  if [ -z "$tasks" ] || [ "$tasks" = "[]" ]; then
    tasks=null
    status=1
    echo "reliability_table: bench/misbehaving_tasks.sh gave no figures" >&2
  elif [ "$(echo "$tasks" | jq 'map(select(.training_exit != 0)) | length')" != 0 ]; then
    status=1
  fi
fi

echo "### Faults"
echo
echo "| fault | trials | max time to exit | culprit named | data lost | resumes that reproduced the loss |"
echo "|---|---|---|---|---|---|"
echo "$faults" | jq -r '.[] | "| \(.fault) | \(.trials) | \(if .max_exit_s == null then "— (killed at once)" else "\(.max_exit_s) s" end) | \(.culprit_named) | \(.data_lost) | \(.reproduced) |"'
echo
echo "### Fuzzing"
echo
if [ "$fuzz" = null ]; then
  echo "(skipped: FUZZ_SECONDS=0, or scripts/fuzz.sh failed before any figure)"
else
  echo "| parser | executions | seconds | crashes | hangs | corpus at the end |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "$fuzz" | jq -r '.[] | "| \(.parser) | \(.executions) | \(.seconds) | \(.crashes) | \(.hangs) | \(.corpus) |"'
fi
echo
echo "### Side tasks that misbehave"
echo
if [ "$tasks" = null ]; then
  echo "(skipped: TASKS=0)"
else
  echo "| case | training | slowdown (95 % interval) | reported |"
  echo "|---|---|---|---|"
  echo "$tasks" | jq -r '.[]
    | (.slowdown | capture("^(?<d>[-+0-9.]+)% \\(95% CI (?<lo>[-+0-9.]+)% \\.\\. (?<hi>[-+0-9.]+)%, (?<n>[0-9]+) pairs")
       // null) as $s
    | "| \(.case) | \(if .training_exit == 0 then "finished" else "exit \(.training_exit)" end) | \(
        if $s != null then "\($s.d) % [\($s.lo), \($s.hi)], \($s.n) pairs"
        elif .slowdown == "" then "—" else (.slowdown | rtrimstr(";")) end) | \(
        if .notes == "" then "—" else (.notes | sub(" +$"; "")) end) |"'
fi

json=$(jq -n --argjson faults "${faults:-null}" --argjson fuzz "$fuzz" --argjson tasks "$tasks" \
  '{faults: $faults, fuzz: $fuzz, side_tasks: $tasks}') || { status=1; json=null; }
if [ -n "${JSON:-}" ]; then
  echo "$json" >"$JSON"
else
  echo
  echo "$json"
fi
exit "$status"
