#!/usr/bin/env bash
# The documented loop, end to end, for the built-in tiny model and for
# examples/small.toml: profile a training run (train --profile-out), plan
# from the profile (plan --cost-file -o best.pipe), train with the plan
# (train --schedule best.pipe). Every step must succeed, the profile must
# describe the model's layers, and the last run must use the plan's
# schedule and its layer split. Registered with ctest (plan_loop_end_to_end).
# Usage: tests/plan_loop_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: plan_loop_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME ARGS...: runs pipewright ARGS into $tmp/NAME.out; 0 when it succeeded.
run() {
  local name=$1
  shift
  "$PW" "$@" >"$tmp/$name.out" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "pipewright $* exited $rc"
    head -20 "$tmp/$name.out"
  fi
  return "$rc"
}

# has FILE WORDS: FILE contains WORDS (a fixed string).
has() { grep -qF -- "$2" "$1" || { fail "$1 lacks '$2'"; head -20 "$1"; }; }

# loop LABEL LAYERS [train flags...]: the three steps on pp=2, m=8.
loop() {
  local label=$1 layers=$2
  shift 2
  local d="$tmp/$label"
  mkdir -p "$d"
  local common=(--pp 2 --microbatches 8 --steps 2 --eval-batches 0 "$@")
  run "$label-profile" train "${common[@]}" --profile-out "$d/prof.json" || return
  has "$d/prof.json" "\"n_layers\": $layers"
  has "$d/prof.json" '"layers": ['
  # Memory for plans under a cap in bytes: activations per stage, static per rank.
  jq -e '([.stages[].activation_bytes] | all(. > 0)) and ([.static_bytes[]] | all(. > 0))' "$d/prof.json" >/dev/null ||
    fail "$label: the profile has no activation or static bytes"
  run "$label-plan" plan -p 2 -m 8 --cost-file "$d/prof.json" -o "$d/best.pipe" || return
  has "$tmp/$label-plan.out" "costs: per layer from $d/prof.json ($layers layers)"
  local split name
  split=$(sed -n 's/^layers //p' "$d/best.pipe")
  name=$(sed -n 's/^schedule //p' "$d/best.pipe")
  [ -n "$split" ] || { fail "$label: $d/best.pipe has no 'layers' line"; cat "$d/best.pipe"; return; }
  local sum=0 n
  for n in $split; do sum=$((sum + n)); done
  [ "$sum" -eq "$layers" ] || fail "$label: 'layers $split' does not sum to $layers"
  run "$label-train" train "${common[@]}" --schedule "$d/best.pipe" || return
  has "$tmp/$label-train.out" "pipewright train: $name on pp=2"
  has "$tmp/$label-train.out" "blocks per stage: ${split// /,}"
  has "$tmp/$label-train.out" "summary: 2 steps"
  # A split that contradicts the plan's is refused, naming both.
  "$PW" train "${common[@]}" --schedule "$d/best.pipe" --layers-per-stage 0 >"$tmp/$label-bad.out" 2>&1 &&
    fail "$label: a contradicting --layers-per-stage was accepted"
  has "$tmp/$label-bad.out" "contradicts $d/best.pipe:"
  "$PW" plan -p 2 -m 8 --cost-file "$d/prof.json" --layers $((layers + 1)) >"$tmp/$label-bad-plan.out" 2>&1 &&
    fail "$label: plan --layers that contradicts the profile was accepted"
  has "$tmp/$label-bad-plan.out" "contradicts $d/prof.json"
}

loop tiny 4
loop small 8 --config "$root/examples/small.toml" --microbatch-size 2

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "plan loop: all passed"
