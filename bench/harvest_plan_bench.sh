#!/usr/bin/env bash
# Harvest-aware planning, planned and obtained: does a side task get the
# task time per step that `plan --side-task-profile` predicted?
#
#   1. time the task alone (`side-task run TASK`): its mean step;
#   2. profile the yardstick (examples/small.toml, pp=2, PROFILE_M
#      microbatches, PROFILE_STEPS steps): train --profile-out;
#   3. plan from the profile twice: the fastest schedule, and the harvest
#      pick for a task of that step (`--side-task-profile`);
#   4. train each with the task (gated policy, placed by the runtime) for
#      STEPS steps, and read the harvest report: the task's CPU seconds per
#      training step from the step its task was ready.
#
# Prints one markdown row per schedule: the plan's makespan and the side work
# it predicted on the task's best rank (ms of task per step), the measured
# step, what the task obtained per step — its CPU, and its work valued at
# its dedicated rate, in ms of task time (the unit of the prediction) — and obtained /
# predicted for both.
#
# Usage: bench/harvest_plan_bench.sh [PATH/TO/pipewright]
# Environment: TASK (cnn:batch=256, 9-11 ms steps here), M (2), STEPS (40),
#   PROFILE_M (M), PROFILE_STEPS (12), KEEP_TMP=1 keeps the work dir.
set -euo pipefail
PW=${1:-build/src/cli/pipewright}
[ -x "$PW" ] || { echo "no pipewright binary at $PW; build first (scripts/build.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "harvest_plan_bench.sh needs jq (scripts/install-deps.sh installs it)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
task=${TASK:-cnn:batch=256}
m=${M:-2}
steps=${STEPS:-40}
# Profiled at the microbatch count that is planned and trained: on a
# machine whose ranks share memory bandwidth, per-op times follow how much
# the ranks compute at once (a profile at 8 microbatches measured F 11 %
# above a 2-microbatch run's).
profile_m=${PROFILE_M:-$m}
profile_steps=${PROFILE_STEPS:-12}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
if [ "${KEEP_TMP:-0}" = 1 ]; then echo "work dir: $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi
train=(train --config "$root/examples/small.toml" --pp 2 --microbatches "$m" --eval-batches 0)

"$PW" side-task run "$task" --seconds 3 --json >"$tmp/alone.json"
step_ms=$(jq '.mean_step_ms' "$tmp/alone.json")
rate=$(jq '.work_per_s' "$tmp/alone.json")
echo "{\"step\": $step_ms}" >"$tmp/task.json"
echo "timing $task alone: $step_ms ms per step; profiling the yardstick (pp=2, $profile_m microbatches, $profile_steps steps)..." >&2
"$PW" train --config "$root/examples/small.toml" --pp 2 --microbatches "$profile_m" --eval-batches 0 --steps "$profile_steps" \
  --profile-out "$tmp/prof.json" >"$tmp/profile.log" 2>&1 ||
  { tail -5 "$tmp/profile.log" >&2; exit 1; }
# One search gives both: the report (--json, with the fastest and the pick)
# and the pick's .pipe; the fastest's .pipe is the same search without a task.
# Each .pipe names the costs it was planned with (NAME.costs.json beside it),
# so train runs the order the plan evaluated.
"$PW" plan -p 2 -m "$m" --cost-file "$tmp/prof.json" --side-task-profile "$tmp/task.json" -o "$tmp/pick.pipe" \
  --json >"$tmp/plan.json"
"$PW" plan -p 2 -m "$m" --cost-file "$tmp/prof.json" -o "$tmp/fastest.pipe" >/dev/null

printf "task %s: %.1f ms per step alone\n\n" "$task" "$step_ms"
echo "| schedule | planned makespan ms | predicted side work ms/step | measured step ms | task CPU ms/step | task work at its rate alone, ms/step | obtained / predicted (CPU, work) |"
echo "|---|---|---|---|---|---|---|"
for name in fastest pick; do
  echo "training with the $name schedule and $task..." >&2
  "$PW" "${train[@]}" --steps "$steps" --schedule "$tmp/$name.pipe" --side-task "$task" \
    --metrics-out "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1 || { tail -5 "$tmp/$name.log" >&2; exit 1; }
  mb_size=$(sed -n "s/.* $m microbatches of \([0-9]*\),.*/\1/p" "$tmp/$name.log" | head -1)
  [ -n "$mb_size" ] || { echo "no microbatch size in the $name run's banner" >&2; exit 1; }
  # The plan's entry, the task's rank in the harvest report, the median
  # step from the task's ready step on, and the task's CPU per step since.
  jq -r --arg key "$name" --slurp --argjson steps "$steps" --argjson tokens $((m * mb_size * 128)) \
    --argjson rate "$rate" '
    .[0].harvest[$key] as $c
    | (.[1:] | map(select(.observers != null)) | .[0].observers | map(select(.tasks | length > 0)) | .[0]) as $rank
    | (.[1:] | map(select(.step != null and .step >= $rank.ready_step) | $tokens / .tokens_per_s * 1000)
       | sort | .[length / 2 | floor]) as $step_ms
    | ($rank.side_task_cpu_seconds * 1000 / ($steps - $rank.ready_step)) as $cpu
    | (($rank.tasks | map(.work) | add) / $rate * 1000 / ($steps - $rank.ready_step)) as $work
    | def ratio($x): if $c.side_work_best_rank > 0 then ($x / $c.side_work_best_rank * 100 | round / 100 | tostring) else "-" end;
    "| \($key): \($c.family) | \($c.makespan | round) | \($c.side_work_best_rank | round) | \($step_ms | round) | \($cpu | round) | \($work | round) | \(ratio($cpu)), \(ratio($work)) |"' \
    "$tmp/plan.json" "$tmp/$name.jsonl"
done
