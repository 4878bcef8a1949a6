#!/usr/bin/env bash
# Activation recomputation, planned and measured: does `train` get the
# memory and the time that `plan` predicted?
#
#   1. profile the yardstick (examples/small.toml, pp=2, 8 microbatches):
#      train --profile-out (measured times; the model's memory estimates);
#   2. plan twice from that profile: without a cap, and under a cap with
#      room for about one microbatch of activations per rank besides the
#      static memory, which no schedule meets without recomputing;
#   3. train each plan REPEATS times (default 3), interleaved, one thread
#      per rank, and take the median step time (steps after the first) and
#      the largest peak of allocated tensor bytes over the ranks.
#
# Prints one markdown row per plan: its schedule, the plan's training step
# (`plan`'s training_step: the schedule lowered as train runs it, with the
# profile's measured sends, receives and optimizer step) and peak, the
# measured step and peak, and measured / planned for each; then the
# recomputation's cost and saving, planned against measured. The
# "unplanned ms" column is the measured step minus the planned one: what
# the plan still leaves out.
#
# Usage: bench/recompute_bench.sh [PATH/TO/pipewright]
# Environment: REPEATS (3), STEPS (8).
set -euo pipefail
PW=${1:-build/src/cli/pipewright}
[ -x "$PW" ] || { echo "no pipewright binary at $PW; build first (scripts/build.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "recompute_bench.sh needs jq (scripts/install-deps.sh installs it)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
repeats=${REPEATS:-3}
steps=${STEPS:-8}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train=(train --config "$root/examples/small.toml" --pp 2 --microbatches 8 --eval-batches 0)

echo "profiling the yardstick (pp=2, 8 microbatches)..." >&2
"$PW" "${train[@]}" --steps 4 --profile-out "$tmp/prof.json" >"$tmp/profile.log" 2>&1 ||
  { tail -5 "$tmp/profile.log" >&2; exit 1; }
# Room for the static bytes and 1.1 stages' activations: one microbatch.
cap=$(jq '(.static_bytes | max) + 1.1 * ([.stages[].activation_bytes] | max) | floor' "$tmp/prof.json")

# plan NAME [ARGS]: writes $tmp/NAME.pipe and records makespan and peak.
declare -A planned_ms planned_peak schedule_of
plan() {
  local name=$1
  shift
  "$PW" plan -p 2 -m 8 --cost-file "$tmp/prof.json" "$@" -o "$tmp/$name.pipe" --json >"$tmp/$name.plan.json"
  planned_ms[$name]=$(jq 'if .best.training_step > 0 then .best.training_step else .best.makespan end' "$tmp/$name.plan.json")
  planned_peak[$name]=$(jq '.best.peak_memory' "$tmp/$name.plan.json")
  schedule_of[$name]=$(jq -r '.best.family' "$tmp/$name.plan.json")
}
plan plain
plan recompute --memory-cap "$cap"

declare -A step_runs peak_runs
for ((r = 1; r <= repeats; r++)); do
  for name in plain recompute; do
    echo "run $r/$repeats: $name" >&2
    "$PW" "${train[@]}" --steps "$steps" --schedule "$tmp/$name.pipe" --metrics-out "$tmp/$name.$r.jsonl" \
      >"$tmp/$name.$r.log" 2>&1 || { tail -5 "$tmp/$name.$r.log" >&2; exit 1; }
    # Median step (ms) after the first, from tokens/s and the tokens of a
    # step (the banner: "8 microbatches of B"; seq_len 128); the largest
    # rank peak (bytes).
    mb_size=$(sed -n 's/.* 8 microbatches of \([0-9]*\),.*/\1/p' "$tmp/$name.$r.log" | head -1)
    [ -n "$mb_size" ] || { echo "no microbatch size in $name's banner" >&2; exit 1; }
    step_runs[$name]+="$(jq -s --argjson tokens $((8 * mb_size * 128)) '[.[] | select(.step != null and .step > 0) | $tokens / .tokens_per_s * 1000]
      | sort | .[length / 2 | floor]' "$tmp/$name.$r.jsonl") "
    peak_runs[$name]+="$(jq -s '[.[] | select(.step != null) | .peak_allocated_bytes | max] | max' \
      "$tmp/$name.$r.jsonl") "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

echo "cap for the recomputing plan: $(mib "$cap") per rank (static + 1.1 stages of activations)"
echo
echo "| plan | schedule | planned step ms | measured step ms | measured / planned | unplanned ms | planned peak | measured peak | measured / planned |"
echo "|---|---|---|---|---|---|---|---|---|"
declare -A step_med peak_med
for name in plain recompute; do
  step_med[$name]=$(median <<<"${step_runs[$name]}")
  peak_med[$name]=$(median <<<"${peak_runs[$name]}")
  awk -v n="$name" -v s="${schedule_of[$name]}" -v pm="${planned_ms[$name]}" -v mm="${step_med[$name]}" \
      -v pp="${planned_peak[$name]}" -v mp="${peak_med[$name]}" 'BEGIN {
    printf "| %s | %s | %.0f | %.0f | %.2f | %.0f | %.1f MiB | %.1f MiB | %.2f |\n", n, s, pm, mm, mm / pm, mm - pm,
           pp / 1048576, mp / 1048576, mp / pp }'
done
echo
awk -v pm0="${planned_ms[plain]}" -v pm1="${planned_ms[recompute]}" -v mm0="${step_med[plain]}" \
    -v mm1="${step_med[recompute]}" -v pp0="${planned_peak[plain]}" -v pp1="${planned_peak[recompute]}" \
    -v mp0="${peak_med[plain]}" -v mp1="${peak_med[recompute]}" 'BEGIN {
  printf "recomputation: time planned %+.0f ms, measured %+.0f ms; peak planned %+.1f MiB, measured %+.1f MiB\n",
         pm1 - pm0, mm1 - mm0, (pp1 - pp0) / 1048576, (mp1 - mp0) / 1048576 }'
