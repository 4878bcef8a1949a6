#!/usr/bin/env bash
# Activation recomputation end to end (docs/schedule-language.md,
# "Recomputation"): training with examples/schedules/1f1b-recompute.pipe
# (DROP after each F, RECOMPUTE before each backward) gives the losses and
# gradient norms of 1f1b.pipe to full precision, fused and split backward,
# with dropout on, and (fused) holds fewer tensor bytes on rank 0; `plan` under a
# cap that only recomputation meets writes such a schedule, and `train`
# runs it. A .pipe with a user kind the executor does not run is refused
# with a clear message.
# Registered with ctest (recompute_end_to_end).
# Usage: tests/recompute_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: recompute_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  train'; then
  echo "recompute checks skipped: this pipewright has no train command"
  exit 0
fi
# train (dropout on, so RECOMPUTE must replay its masks), run, losses, zb_h1_with.
source "$root/tests/activation_actions_lib.sh"
rank0_peak() { jq -s '[.[] | select(.step != null) | .peak_allocated_bytes[0]] | max' "$1"; }

# zb-h1.pipe with the same two kinds, before I (split backward).
zb_h1_with zb-h1-recompute 'kind DROP memory=-1 after=F priority=100\nkind RECOMPUTE memory=1 after=DROP before=I priority=100'

for pair in "1f1b:$root/examples/schedules/1f1b-recompute.pipe" "zb-h1:$tmp/zb-h1-recompute.pipe"; do
  base=${pair%%:*}
  recomputing=${pair#*:}
  run "$base" "${train[@]}" --microbatches 4 --steps 3 --schedule "$root/examples/schedules/$base.pipe" --metrics-out "$tmp/$base.jsonl"
  [ "$rc" -eq 0 ] || { fail "$base exited $rc"; tail -5 "$tmp/$base.log"; continue; }
  run "$base-rc" "${train[@]}" --microbatches 4 --steps 3 --schedule "$recomputing" --metrics-out "$tmp/$base-rc.jsonl"
  [ "$rc" -eq 0 ] || { fail "$base with recomputation exited $rc"; tail -5 "$tmp/$base-rc.log"; continue; }
  [ -n "$(losses "$tmp/$base.jsonl")" ] || fail "$base: no losses in its metrics"
  [ "$(losses "$tmp/$base.jsonl")" = "$(losses "$tmp/$base-rc.jsonl")" ] ||
    fail "$base: recomputation changed the losses: $(losses "$tmp/$base.jsonl" | tr '\n' ' ') vs $(losses "$tmp/$base-rc.jsonl" | tr '\n' ' ')"
  # With split backward the pending W's keep most activations anyway (each
  # Linear's input): the saving is checked on fused backward.
  [ "$base" = 1f1b ] || continue
  plain=$(rank0_peak "$tmp/$base.jsonl")
  dropped=$(rank0_peak "$tmp/$base-rc.jsonl")
  awk -v a="$dropped" -v b="$plain" 'BEGIN { exit !(a < 0.9 * b) }' ||
    fail "$base: rank 0's peak with recomputation ($dropped B) is not 10% below without ($plain B)"
done

# --recompute-paired: DROP and RECOMPUTE skipped in every other step. The
# losses stay those of the plain schedule (skipping a recomputation keeps
# the graph F built), the skipped steps hold rank 0's activations again,
# and the summary and metrics report the pairs. Its profile measures
# recomputation's own times (docs/cost-model.md), which `plan` then prices
# recomputation with.
run plain7 "${train[@]}" --microbatches 4 --steps 7 --schedule "$root/examples/schedules/1f1b.pipe" --metrics-out "$tmp/plain7.jsonl"
run paired "${train[@]}" --microbatches 4 --steps 7 --schedule "$root/examples/schedules/1f1b-recompute.pipe" \
  --recompute-paired 1 --metrics-out "$tmp/paired.jsonl" --profile-out "$tmp/paired.prof.json"
if [ "$rc" -ne 0 ]; then
  fail "--recompute-paired exited $rc"; tail -5 "$tmp/paired.log"
else
  [ -n "$(losses "$tmp/plain7.jsonl")" ] && [ "$(losses "$tmp/plain7.jsonl")" = "$(losses "$tmp/paired.jsonl")" ] ||
    fail "--recompute-paired changed the losses: $(losses "$tmp/plain7.jsonl" | tr '\n' ' ') vs $(losses "$tmp/paired.jsonl" | tr '\n' ' ')"
  # Steps 2-3 and 4-5 are the counted pairs (the first pair holds step 0).
  held=$(jq -s -c '[.[] | select(.step != null) | .recompute_held]' "$tmp/paired.jsonl")
  jq -e -n --argjson h "$held" '($h | length) == 7 and ([range(0; 3) | [$h[2 * .], $h[2 * . + 1]] | sort] | all(. == [false, true]))' >/dev/null ||
    fail "--recompute-paired 1: steps not held in one step of every pair: $held"
  jq -s -e 'map(select(.recompute_paired != null)) | length == 1 and (.[0].recompute_paired |
      .pairs == 2 and .first_step == 2 and .block_steps == 1 and .step_ms_with > 0 and .step_ms_without > 0 and
      .peak_bytes_without[0] > 1.1 * .peak_bytes_with[0])' "$tmp/paired.jsonl" >/dev/null ||
    { fail "--recompute-paired: the metrics' last line is not 2 pairs with rank 0 holding 10% more without DROP"; tail -1 "$tmp/paired.jsonl"; }
  grep -q 'recompute paired (2 pairs of 1-step blocks from step 2): step [-+][0-9.]*% \[' "$tmp/paired.log" ||
    { fail "--recompute-paired: no summary line"; tail -4 "$tmp/paired.log"; }
  jq -e '(.stages | length) == 2 and all(.stages[]; .RECOMPUTE > 0 and .B_after_recompute > 0 and .B > 0)' \
    "$tmp/paired.prof.json" >/dev/null ||
    { fail "the paired run's profile lacks recomputation's own times"; jq -c .stages "$tmp/paired.prof.json"; }
  run plan-measured plan -p 2 -m 4 --cost-file "$tmp/paired.prof.json" --memory-cap 1e12
  grep -q '^recomputation: priced with the measured times' "$tmp/plan-measured.log" ||
    { fail "plan on the paired profile does not say it prices recomputation with its measured times"; head -3 "$tmp/plan-measured.log"; }
fi
run paired-short "${train[@]}" --microbatches 4 --steps 3 --schedule "$root/examples/schedules/1f1b-recompute.pipe" \
  --recompute-paired 1
[ "$rc" -eq 0 ] && grep -q "no complete pair of 1-step blocks after the first step; run at least 4 steps" \
  "$tmp/paired-short.log" || { fail "--recompute-paired over too few steps: no clear note"; tail -3 "$tmp/paired-short.log"; }
run paired-plain "${train[@]}" --steps 3 --schedule "$root/examples/schedules/1f1b.pipe" --recompute-paired 1
[ "$rc" -ne 0 ] && grep -q "recompute-paired: schedule '1f1b' has no DROP action to skip" "$tmp/paired-plain.log" &&
  ! grep -q "rank 0 (pid" "$tmp/paired-plain.log" ||
  { fail "--recompute-paired on a schedule without DROP: no clear refusal before the ranks start"; tail -3 "$tmp/paired-plain.log"; }
run paired-both "${train[@]}" --steps 3 --schedule "$root/examples/schedules/1f1b-recompute.pipe" --recompute-paired 1 \
  --harvest-paired 1
[ "$rc" -ne 0 ] && grep -q "measure one of them per run" "$tmp/paired-both.log" ||
  { fail "--recompute-paired with --harvest-paired: no clear refusal"; tail -3 "$tmp/paired-both.log"; }

# The planner under a cap only recomputation meets (one microbatch in
# flight per rank: a plain schedule runs the microbatches one by one), then
# training with its plan.
run plan plan -p 2 -m 8 --cost F=1,B=2 --memory-cap 1 -o "$tmp/rc.pipe"
[ "$rc" -eq 0 ] || { fail "plan under the cap exited $rc"; tail -5 "$tmp/plan.log"; }
grep -q '^kind RECOMPUTE' "$tmp/rc.pipe" 2>/dev/null || { fail "the plan under a cap of 1 microbatch does not recompute"; cat "$tmp/plan.log"; }
grep -q '^recomputation: priced as F again' "$tmp/plan.log" || { fail "plan does not say how it prices recomputation"; head -3 "$tmp/plan.log"; }
run planned "${train[@]}" --microbatches 8 --steps 2 --schedule "$tmp/rc.pipe"
[ "$rc" -eq 0 ] || { fail "training with the recomputing plan exited $rc"; tail -5 "$tmp/planned.log"; }

# Other user kinds (besides OFFLOAD/RELOAD, tests/offload_cli_test.sh) are
# for the simulator only.
sed 's/^priority B > F/kind PREFETCH memory=1 after=F\npriority B > F/' "$root/examples/schedules/1f1b.pipe" >"$tmp/prefetch.pipe"
run prefetch "${train[@]}" --steps 1 --schedule "$tmp/prefetch.pipe"
[ "$rc" -ne 0 ] || fail "a schedule with PREFETCH trained"
grep -q "the executor runs the built-in kinds, DROP, RECOMPUTE, OFFLOAD and RELOAD, not kind PREFETCH" "$tmp/prefetch.log" ||
  { fail "PREFETCH: no clear refusal"; tail -3 "$tmp/prefetch.log"; }

if [ "$failures" -gt 0 ]; then
  echo "$failures recompute check(s) failed"
  exit 1
fi
echo "recompute checks passed"
