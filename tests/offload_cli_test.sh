#!/usr/bin/env bash
# Activation offload end to end (docs/schedule-language.md, "Offload"):
# training with examples/schedules/1f1b-offload.pipe (OFFLOAD after each F,
# RELOAD before each backward) gives the losses and gradient norms of
# 1f1b.pipe to full precision, fused and split backward, with dropout on;
# the run reports the bytes it moved (metrics and summary), on every rank.
# A schedule that offloads without reloading is refused at the backward
# with a message that says to RELOAD.
# Registered with ctest (offload_end_to_end).
# Usage: tests/offload_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: offload_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  train'; then
  echo "offload checks skipped: this pipewright has no train command"
  exit 0
fi
# train (dropout on), run, losses, zb_h1_with.
source "$root/tests/activation_actions_lib.sh"
train+=(--microbatches 4)
# The smallest per-rank offloaded bytes over the steps (0 if any rank moved nothing).
least_offloaded() { jq -s '[.[] | select(.step != null) | (.offloaded_bytes // [0]) | min] | min' "$1"; }

# zb-h1.pipe with the same two kinds, RELOAD before I (split backward).
zb_h1_with zb-h1-offload 'kind OFFLOAD cost=0.25 memory=-1 after=F priority=100\nkind RELOAD cost=0.25 memory=1 after=OFFLOAD before=I priority=100'

for pair in "1f1b:$root/examples/schedules/1f1b-offload.pipe" "zb-h1:$tmp/zb-h1-offload.pipe"; do
  base=${pair%%:*}
  offloading=${pair#*:}
  run "$base" "${train[@]}" --steps 3 --schedule "$root/examples/schedules/$base.pipe" --metrics-out "$tmp/$base.jsonl"
  [ "$rc" -eq 0 ] || { fail "$base exited $rc"; tail -5 "$tmp/$base.log"; continue; }
  run "$base-off" "${train[@]}" --steps 3 --schedule "$offloading" --metrics-out "$tmp/$base-off.jsonl"
  [ "$rc" -eq 0 ] || { fail "$base with offload exited $rc"; tail -5 "$tmp/$base-off.log"; continue; }
  [ -n "$(losses "$tmp/$base.jsonl")" ] || fail "$base: no losses in its metrics"
  [ "$(losses "$tmp/$base.jsonl")" = "$(losses "$tmp/$base-off.jsonl")" ] ||
    fail "$base: offload changed the losses: $(losses "$tmp/$base.jsonl" | tr '\n' ' ') vs $(losses "$tmp/$base-off.jsonl" | tr '\n' ' ')"
  moved=$(least_offloaded "$tmp/$base-off.jsonl")
  # At least one [8, 128, 256] fp32 activation per microbatch and rank.
  awk -v b="$moved" 'BEGIN { exit !(b >= 4 * 8 * 128 * 256 * 4) }' ||
    fail "$base: a rank offloaded only $moved bytes in some step"
  grep -q 'offload per rank and step: .* to the host and back' "$tmp/$base-off.log" ||
    { fail "$base: the summary does not report the offload"; tail -3 "$tmp/$base-off.log"; }
  ! grep -q '"offloaded_bytes"' "$tmp/$base.jsonl" || fail "$base without offload reports offloaded bytes"
done

# OFFLOAD without RELOAD: the backward is refused and says why.
sed '/^kind RELOAD/d' "$root/examples/schedules/1f1b-offload.pipe" >"$tmp/no-reload.pipe"
run no-reload "${train[@]}" --steps 1 --schedule "$tmp/no-reload.pipe"
[ "$rc" -ne 0 ] || fail "a schedule that never reloads trained"
grep -q "offloaded (OFFLOAD) and not reloaded; RELOAD must run before its backward" "$tmp/no-reload.log" ||
  { fail "OFFLOAD without RELOAD: no clear refusal"; tail -3 "$tmp/no-reload.log"; }

if [ "$failures" -gt 0 ]; then
  echo "$failures offload check(s) failed"
  exit 1
fi
echo "offload checks passed"
