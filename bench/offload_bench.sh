#!/usr/bin/env bash
# Activation offload, measured: what OFFLOAD/RELOAD cost a training step.
#
# Trains the yardstick (examples/small.toml, pp=2, 8 microbatches) with
# examples/schedules/1f1b.pipe and 1f1b-offload.pipe, REPEATS times each
# (default 3), interleaved, one thread per rank, and prints per schedule:
# the median step time (steps after the first), the largest peak of
# allocated tensor bytes over the ranks, and per rank the bytes OFFLOAD
# moved to the host in a step and the time spent in OFFLOAD + RELOAD.
#
# Not a row of bench/recompute_bench.sh: that one compares plans with what
# they predict, and the planner does not generate offload (the cost model
# has no host-link bandwidth to price it). On a CPU-only machine the host
# is the same memory: the copies cost time and save nothing, which is what
# this measures; the peak is not expected to drop.
#
# Usage: bench/offload_bench.sh [PATH/TO/pipewright]
# Environment: REPEATS (3), STEPS (6).
set -euo pipefail
PW=${1:-build/src/cli/pipewright}
[ -x "$PW" ] || { echo "no pipewright binary at $PW; build first (scripts/build.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "offload_bench.sh needs jq (scripts/install-deps.sh installs it)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
repeats=${REPEATS:-3}
steps=${STEPS:-6}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train=(train --config "$root/examples/small.toml" --pp 2 --microbatches 8 --eval-batches 0 --steps "$steps")

declare -A step_runs peak_runs bytes_runs ms_runs
for ((r = 1; r <= repeats; r++)); do
  for name in 1f1b 1f1b-offload; do
    echo "run $r/$repeats: $name" >&2
    "$PW" "${train[@]}" --schedule "$root/examples/schedules/$name.pipe" --metrics-out "$tmp/$name.$r.jsonl" \
      >"$tmp/$name.$r.log" 2>&1 || { tail -5 "$tmp/$name.$r.log" >&2; exit 1; }
    mb_size=$(sed -n 's/.* 8 microbatches of \([0-9]*\),.*/\1/p' "$tmp/$name.$r.log" | head -1)
    [ -n "$mb_size" ] || { echo "no microbatch size in $name's banner" >&2; exit 1; }
    # Median step ms after the first (from tokens/s), the largest rank peak,
    # and per rank the median offloaded bytes and offload ms (0 without).
    step_runs[$name]+="$(jq -s --argjson tokens $((8 * mb_size * 128)) '[.[] | select(.step != null and .step > 0) | $tokens / .tokens_per_s * 1000]
      | sort | .[length / 2 | floor] | round' "$tmp/$name.$r.jsonl") "
    peak_runs[$name]+="$(jq -s '[.[] | select(.step != null) | .peak_allocated_bytes | max] | max' "$tmp/$name.$r.jsonl") "
    bytes_runs[$name]+="$(jq -s -c '[.[] | select(.step != null and .step > 0) | (.offloaded_bytes // [0, 0])]
      | transpose | map(sort | .[length / 2 | floor]) | join("/")' "$tmp/$name.$r.jsonl" | tr -d '"') "
    ms_runs[$name]+="$(jq -s -c '[.[] | select(.step != null and .step > 0) | (.offload_ms // [0, 0])]
      | transpose | map(sort | .[length / 2 | floor] | round) | join("/")' "$tmp/$name.$r.jsonl" | tr -d '"') "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "| schedule | step ms (median of $repeats runs) | every run | peak tensors | offloaded per step, rank 0/1 | OFFLOAD + RELOAD ms, rank 0/1 (per run) |"
echo "|---|---|---|---|---|---|"
for name in 1f1b 1f1b-offload; do
  step=$(median <<<"${step_runs[$name]}")
  peak=$(median <<<"${peak_runs[$name]}")
  bytes=$(tr ' ' '\n' <<<"${bytes_runs[$name]}" | grep -v '^$' | head -1 |
          awk -F/ '{ for (i = 1; i <= NF; ++i) printf "%s%.1f MiB", (i > 1 ? " / " : ""), $i / 1048576 }')
  awk -v n="$name" -v s="$step" -v all="${step_runs[$name]}" -v p="$peak" -v b="$bytes" -v ms="${ms_runs[$name]}" 'BEGIN {
    printf "| %s | %.0f | %s| %.1f MiB | %s | %s|\n", n, s, all, p / 1048576, b, ms }'
done
