#!/usr/bin/env bash
# `train --max-restarts` (docs/reliability.md, "Faults"): rank 1 is killed
# once after step 3 (PIPEWRIGHT_FAULT, test-only); the launcher restarts all
# ranks from the checkpoint of step 2 and the run ends with exactly the loss
# of an uninterrupted run (full precision, --metrics-out). So does a plain
# rerun with --resume auto. Without
# --max-restarts the same fault fails the job naming rank 1; a malformed
# PIPEWRIGHT_FAULT is refused. Registered with ctest.
# Usage: tests/restart_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: restart_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  train'; then
  echo "restart checks skipped: this pipewright has no train command"
  exit 0
fi
tiny=(train --config "$root/examples/tiny.toml" --pp 2 --steps 6 --eval-batches 0 --timeout 240)

run() {
  local name=$1
  shift
  "$@" >"$tmp/$name.log" 2>&1
  rc=$?
}
expect_in() {
  grep -qF -- "$2" "$tmp/$1.log" || { fail "$1: output lacks '$2'"; tail -5 "$tmp/$1.log"; }
}
final_loss() { tail -n 1 "$1" 2>/dev/null | jq -r '.loss'; }

run reference "$PW" "${tiny[@]}" --metrics-out "$tmp/reference.jsonl"
[ "$rc" -eq 0 ] || { fail "the uninterrupted run exited $rc"; tail -5 "$tmp/reference.log"; }

run restarted env PIPEWRIGHT_FAULT=kill:rank=1,step=3 "$PW" "${tiny[@]}" --checkpoint-dir "$tmp/ckpt" \
  --checkpoint-every 2 --max-restarts 1 --metrics-out "$tmp/restarted.jsonl"
[ "$rc" -eq 0 ] || { fail "the restarted run exited $rc"; tail -5 "$tmp/restarted.log"; }
expect_in restarted "rank 1 (pid"
expect_in restarted "was killed by signal SIGKILL"
expect_in restarted "restart 1 of 1 (--max-restarts): all 2 ranks from the checkpoint at step 2 in $tmp/ckpt"
[ "$(grep -c 'restart 1 of 1' "$tmp/restarted.log")" -eq 1 ] || fail "expected exactly one restart"
want=$(final_loss "$tmp/reference.jsonl")
got=$(final_loss "$tmp/restarted.jsonl")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "final loss after the restart $got != uninterrupted $want"
# The restart resumed at step 2: its metrics hold steps 2..5.
[ "$(head -n 1 "$tmp/restarted.jsonl" | jq -r '.step')" = 2 ] || fail "the restart did not resume at step 2"

run no_restart env PIPEWRIGHT_FAULT=kill:rank=1,step=3 "$PW" "${tiny[@]}"
[ "$rc" -ne 0 ] || fail "a killed rank without --max-restarts exited 0"
expect_in no_restart "training failed: rank 1 (pid"
grep -qF "restart" "$tmp/no_restart.log" && fail "restarted without --max-restarts"

# --resume auto, the rerun semantics of torchrun --max-restarts and Slurm
# --requeue: the same command line after a failure resumes from the last
# checkpoint in --checkpoint-dir; a first run starts from step 0.
auto=("${tiny[@]}" --checkpoint-dir "$tmp/auto" --checkpoint-every 2 --resume auto --metrics-out "$tmp/auto.jsonl")
run auto_killed env PIPEWRIGHT_FAULT=kill:rank=1,step=3 "$PW" "${auto[@]}"
[ "$rc" -ne 0 ] || fail "a killed rank under --resume auto exited 0"
expect_in auto_killed "--resume auto: no checkpoint in $tmp/auto yet: from step 0"
run auto_rerun "$PW" "${auto[@]}"
[ "$rc" -eq 0 ] || { fail "the rerun under --resume auto exited $rc"; tail -5 "$tmp/auto_rerun.log"; }
expect_in auto_rerun "--resume auto: the checkpoint at step 2 in $tmp/auto"
got=$(final_loss "$tmp/auto.jsonl")
[ "$got" = "$want" ] || fail "final loss after the --resume auto rerun $got != uninterrupted $want"
run auto_no_dir "$PW" "${tiny[@]}" --resume auto
[ "$rc" -ne 0 ] || fail "--resume auto without --checkpoint-dir was accepted"
expect_in auto_no_dir "--resume auto resumes from --checkpoint-dir when it holds a checkpoint: give --checkpoint-dir DIR too"
echo "{" >"$tmp/auto/manifest.json"
run auto_corrupt "$PW" "${auto[@]}"
[ "$rc" -ne 0 ] || fail "--resume auto started over a corrupt manifest"
expect_in auto_corrupt "--resume auto will not start from step 0 over it"

run bad_fault env PIPEWRIGHT_FAULT=kill:rank=1 "$PW" "${tiny[@]}"
[ "$rc" -ne 0 ] || fail "a malformed PIPEWRIGHT_FAULT was accepted"
expect_in bad_fault "PIPEWRIGHT_FAULT='kill:rank=1': rank and step are required"

if [ "$failures" -ne 0 ]; then
  echo "$failures restart check(s) failed"
  exit 1
fi
echo "all restart checks passed"
