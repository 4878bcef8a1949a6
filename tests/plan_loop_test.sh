#!/usr/bin/env bash
# The documented loop, end to end, for the built-in tiny model and for
# examples/small.toml: profile a training run (train --profile-out), plan
# from the profile (plan --cost-file -o best.pipe), train with the plan
# (train --schedule best.pipe). Every step must succeed, the profile must
# describe the model's layers, and the last run must use the plan's
# schedule and its layer split; a plan under a byte cap trains in the
# order it was planned in, compiled with the costs its `costs` line names.
# Registered with ctest (plan_loop_end_to_end).
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
  has "$tmp/$label-plan.out" "wrote $d/best.costs.json (the per-stage costs it was planned with"
  has "$tmp/$label-plan.out" "train it: pipewright train --schedule $d/best.pipe"
  has "$d/best.pipe" "costs best.costs.json"
  jq -e '.stages | length >= 2' "$d/best.costs.json" >/dev/null || fail "$label: best.costs.json has no stages"
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
  # Under a cap in bytes the plan's program admits microbatches by the
  # profile's activation bytes (or by shares under a tighter cap); compiled
  # with the costs its `costs` line names (here --out-costs, in a
  # subdirectory), `train` runs the order the plan evaluated: rank 0's
  # actions in a traced step equal the program `schedule export` compiles
  # from the same file.
  local cap
  cap=$(jq '(.static_bytes | max) + 1.5 * ([.stages[].activation_bytes] | max) | floor' "$d/prof.json")
  mkdir -p "$d/costs"
  run "$label-capped" plan -p 2 -m 8 --cost-file "$d/prof.json" --memory-cap "$cap" -o "$d/capped.pipe" \
    --out-costs "$d/costs/capped.json" || return
  # The winner's cap is the byte cap, or a tighter one in microbatch shares
  # (policy_space.cc also tries those; which wins follows the profile).
  # A byte cap is printed in the largest unit that holds it exactly (a cap
  # that is a whole number of KiB reads "4353KiB"): it must not exceed --memory-cap.
  local memory cap_bytes
  memory=$(sed -n 's/^memory //p' "$d/capped.pipe")
  if [[ "$memory" =~ ^[0-9]+\ microbatches$ ]]; then
    :
  elif [[ "$memory" =~ ^([0-9.e+]+)(B|KiB|MiB|GiB|TiB)$ ]]; then
    cap_bytes=$(jq -n --arg n "${BASH_REMATCH[1]}" --arg u "${BASH_REMATCH[2]}" \
      '($n | tonumber) * {"B": 1, "KiB": 1024, "MiB": 1048576, "GiB": 1073741824, "TiB": 1099511627776}[$u]')
    jq -e -n --argjson got "$cap_bytes" --argjson cap "$cap" '$got <= $cap' >/dev/null ||
      fail "$label: the capped plan's memory $memory exceeds --memory-cap $cap"
  else
    fail "$label: the capped plan has no memory cap"; cat "$d/capped.pipe"
  fi
  has "$d/capped.pipe" "costs costs/capped.json"
  run "$label-capped-export" schedule export -s "$d/capped.pipe" -o "$d/capped.txt" || return
  run "$label-capped-train" train "${common[@]}" --schedule "$d/capped.pipe" --trace "$d/capped.trace.json" || return
  has "$tmp/$label-capped-train.out" "order compiled with the costs in $d/costs/capped.json"
  local planned trained
  planned=$(sed -n 's/^rank 0: //p' "$d/capped.txt")
  trained=$(jq -r '[.traceEvents[] | select(.ph == "X" and .tid == 0 and .args.step == 1 and
                     (.cat | test("^(F|B|I|W|DROP|RECOMPUTE)$")))] | sort_by(.ts) | map(.name) | join(" ")' \
            "$d/capped.trace.json")
  [ -n "$planned" ] && [ "$planned" = "$trained" ] ||
    fail "$label: train ran rank 0 as '$trained', the plan compiles to '$planned'"
  # The same program without its costs line may not finish under the default
  # costs; then the error says what to add. Given costs replace the line's.
  sed '/^costs /d' "$d/capped.pipe" >"$d/bare.pipe"
  if ! "$PW" train "${common[@]}" --schedule "$d/bare.pipe" >"$tmp/$label-no-costs.out" 2>&1; then
    has "$tmp/$label-no-costs.out" "names them in a \`costs\` line; add that line, or pass the file with --schedule-costs FILE"
  fi
  run "$label-given-costs" train "${common[@]}" --schedule "$d/bare.pipe" --schedule-costs "$d/costs/capped.json" ||
    return
  has "$tmp/$label-given-costs.out" "order compiled with the costs in $d/costs/capped.json"
  # A program moved away from its costs file says which line and how to fix.
  mkdir -p "$d/moved"
  cp "$d/capped.pipe" "$d/moved/capped.pipe"
  "$PW" train "${common[@]}" --schedule "$d/moved/capped.pipe" >"$tmp/$label-moved.out" 2>&1 &&
    fail "$label: a program whose costs file is missing trained"
  has "$tmp/$label-moved.out" "$d/moved/capped.pipe:"
  has "$tmp/$label-moved.out" "'costs costs/capped.json'"
  has "$tmp/$label-moved.out" "keep the costs file"
  "$PW" schedule sim -s "$d/moved/capped.pipe" >"$tmp/$label-moved-sim.out" 2>&1 &&
    fail "$label: schedule sim of a program whose costs file is missing succeeded"
  has "$tmp/$label-moved-sim.out" "'costs costs/capped.json' ($d/moved/costs/capped.json)"
  # A .pipe with a syntax error gets the parser's message, not that hint.
  printf 'schedule bad\nranks 2\nmicrobatchs 8\n' >"$d/bad.pipe"
  "$PW" train "${common[@]}" --schedule "$d/bad.pipe" >"$tmp/$label-bad-pipe.out" 2>&1 &&
    fail "$label: a .pipe with a syntax error trained"
  has "$tmp/$label-bad-pipe.out" "did you mean 'microbatches'"
  ! grep -q -- "--schedule-costs" "$tmp/$label-bad-pipe.out" || fail "$label: a syntax error got the --schedule-costs hint"
  "$PW" train "${common[@]}" --schedule "$root/examples/schedules/1f1b.pipe" --schedule-costs /nonexistent.json \
    >"$tmp/$label-bad-costs.out" 2>&1 && fail "$label: a missing --schedule-costs file was accepted"
  has "$tmp/$label-bad-costs.out" "--schedule-costs"
  "$PW" train "${common[@]}" --schedule 1f1b --schedule-costs "$d/costs/capped.json" >"$tmp/$label-not-pipe.out" 2>&1 &&
    fail "$label: --schedule-costs with a built-in family was accepted"
  has "$tmp/$label-not-pipe.out" "only a .pipe schedule is compiled with costs"
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
