#!/usr/bin/env bash
# End-to-end integrity checks (docs/reliability.md, "Integrity"): a
# checkpoint file with 4 bytes flipped in the middle is refused by
# `train --resume` and `infer --checkpoint` naming the file; a run whose
# loss turns NaN (--lr 1e6 --grad-clip 0) stops naming the step and the
# stages, and with --on-nonfinite skip it finishes, reporting the skipped
# steps. Registered with ctest. Usage: tests/integrity_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: integrity_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  train'; then
  echo "integrity checks skipped: this pipewright has no train command"
  exit 0
fi
tiny=(--config "$root/examples/tiny.toml" --pp 2 --schedule 1f1b --eval-batches 0)

# run NAME ARGS...: runs pipewright ARGS, output in $tmp/NAME.log, exit code in $rc.
run() {
  local name=$1
  shift
  "$PW" "$@" >"$tmp/$name.log" 2>&1
  rc=$?
}
# expect_in NAME WORDS: the log of NAME contains WORDS (a fixed string).
expect_in() {
  grep -qF -- "$2" "$tmp/$1.log" || { fail "$1: output lacks '$2'"; tail -5 "$tmp/$1.log"; }
}

# --- a damaged checkpoint file is refused, naming it ---
run write train "${tiny[@]}" --steps 2 --checkpoint-dir "$tmp/ckpt"
[ "$rc" -eq 0 ] || { fail "train --checkpoint-dir exited $rc"; tail -5 "$tmp/write.log"; }
file=$tmp/ckpt/step_2/stage_1.safetensors
if [ -f "$file" ]; then
  grep -q '"sha256"' "$tmp/ckpt/manifest.json" || fail "manifest.json has no sha256"
  run resume_ok train "${tiny[@]}" --steps 3 --resume "$tmp/ckpt"
  [ "$rc" -eq 0 ] || { fail "resume of an intact checkpoint exited $rc"; tail -5 "$tmp/resume_ok.log"; }
  before=$(sha256sum <"$file")
  size=$(stat -c %s "$file")
  # The issue's repro: 4 bytes in the middle (inside a tensor: the file still parses).
  printf '\xde\xad\xbe\xef' | dd of="$file" bs=1 seek=$((size / 2)) conv=notrunc status=none
  [ "$(sha256sum <"$file")" != "$before" ] || fail "flipping bytes did not change $file"
  run resume train "${tiny[@]}" --steps 3 --resume "$tmp/ckpt"
  [ "$rc" -ne 0 ] || fail "train --resume of a corrupt checkpoint exited 0"
  expect_in resume "checkpoint file $file is corrupt"
  expect_in resume "Use an intact copy of the checkpoint"
  if "$PW" --help | grep -q '^  infer'; then
    echo '{"id": "a", "prompt": "hello"}' >"$tmp/prompts.jsonl"
    run infer infer --checkpoint "$tmp/ckpt" --prompts "$tmp/prompts.jsonl" --out "$tmp/out.jsonl" --max-tokens 4
    [ "$rc" -ne 0 ] || fail "infer --checkpoint of a corrupt checkpoint exited 0"
    expect_in infer "checkpoint file $file is corrupt"
  fi
else
  fail "train --checkpoint-dir wrote no $file"
fi

# --- a non-finite loss or gradient norm stops the run, naming step and stage ---
run nan train "${tiny[@]}" --steps 4 --lr 1e6 --grad-clip 0
[ "$rc" -ne 0 ] || fail "train --lr 1e6 --grad-clip 0 exited 0"
expect_in nan "training stopped at step 1: the loss is"
expect_in nan "(computed in stage 1)"
expect_in nan "gradients not finite in stages 0, 1"
grep -qF "summary:" "$tmp/nan.log" && fail "a stopped run printed a summary"

# --- --on-nonfinite skip: the run finishes, every skipped step reported ---
run skip train "${tiny[@]}" --steps 4 --lr 1e6 --grad-clip 0 --on-nonfinite skip --checkpoint-dir "$tmp/skip"
[ "$rc" -eq 0 ] || { fail "--on-nonfinite skip exited $rc"; tail -5 "$tmp/skip.log"; }
expect_in skip "summary: 4 steps"
expect_in skip "3 updates skipped (non-finite)"
[ "$(grep -c "the step's update was skipped (--on-nonfinite skip)" "$tmp/skip.log")" -eq 3 ] ||
  fail "--on-nonfinite skip: expected steps 1-3 reported as skipped"
# Skipped steps are not AdamW steps: the manifest counts the one update applied.
jq -e '.step == 4 and .optimizer.steps == 1' "$tmp/skip/manifest.json" >/dev/null ||
  fail "the manifest of the skip run does not say step 4, 1 optimizer step"

run bad_choice train "${tiny[@]}" --steps 1 --on-nonfinite ignore
[ "$rc" -eq 2 ] || fail "--on-nonfinite ignore exited $rc, want 2 (a usage error, before any rank starts)"
expect_in bad_choice "'ignore' is not a value of on_nonfinite; use one of stop, skip"

if [ "$failures" -ne 0 ]; then
  echo "$failures integrity check(s) failed"
  exit 1
fi
echo "all integrity checks passed"
