#!/usr/bin/env bash
# Offline inference as a side task, end to end (docs/harvest.md, "Inference
# in the bubbles"): `train --side-task infer:...` generates a prompt file
# in a training run's bubbles with a checkpoint of an earlier run (runs
# are repeated until the file is complete; no prompt may be written twice;
# stopping part way and resuming is InferTaskTest's, where it is
# deterministic); what it wrote is token for token what a dedicated
# `pipewright infer` of the same checkpoint writes; training's losses are
# those of the same run without the side task.
# Registered with ctest (harvest_infer_end_to_end).
# Usage: tests/harvest_infer_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: harvest_infer_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  side-task'; then
  echo "harvest infer checks skipped: this pipewright has no side-task command"
  exit 0
fi
train=(train --config "$root/examples/tiny.toml" --pp 2 --eval-batches 0)
losses() { jq -c '[.loss, .grad_norm]' "$1" 2>/dev/null | grep -v null; }
# id -> tokens, one line per id, sorted: comparable across files.
tokens_by_id() { jq -c '[.id, .tokens]' "$1" | sort; }

"$PW" "${train[@]}" --steps 2 --checkpoint-dir "$tmp/ckpt" >"$tmp/ckpt.log" 2>&1 ||
  { fail "training the checkpoint"; tail -5 "$tmp/ckpt.log"; }
head -8 "$root/examples/prompts.jsonl" >"$tmp/prompts.jsonl"
task="infer:checkpoint=$tmp/ckpt,prompts=$tmp/prompts.jsonl,out=$tmp/side.jsonl,max_tokens=12,max_batch_tokens=16@rank=1"

"$PW" "${train[@]}" --steps 200 --metrics-out "$tmp/plain.jsonl" >"$tmp/plain.log" 2>&1 ||
  { fail "training without the side task"; tail -5 "$tmp/plain.log"; }
# Runs until the file is complete (a run may end before the task does).
# The task becomes ready after ~60 steps on a quiet machine (its LibTorch
# start-up runs at idle priority on the rank's core) and much later when
# other tests share the cores: 200-step runs, up to 10 of them (usually
# one is enough).
for run in 1 2 3 4 5 6 7 8 9 10; do
  "$PW" "${train[@]}" --steps 200 --side-task "$task" --metrics-out "$tmp/harvest$run.jsonl" \
    >"$tmp/harvest$run.log" 2>&1 || { fail "training run $run with the infer side task"; tail -5 "$tmp/harvest$run.log"; }
  [ "$(losses "$tmp/plain.jsonl")" = "$(losses "$tmp/harvest$run.jsonl")" ] ||
    fail "run $run: the side task changed training's losses"
  [ "$(wc -l <"$tmp/side.jsonl" 2>/dev/null || echo 0)" -ge 8 ] && break
done
lines=$(wc -l <"$tmp/side.jsonl" 2>/dev/null || echo 0)
# A run in which the task never became ready reports no work; the one that
# finished the file does.
grep -q 'harvest rank 1 .*tokens' "$tmp/harvest$run.log" ||
  { fail "run $run: the harvest report does not count generated tokens"; grep harvest "$tmp/harvest$run.log"; }
if [ "$lines" -ne 8 ]; then
  fail "the side task wrote $lines result lines for 8 prompts after $run runs"
  grep -h "harvest rank 1" "$tmp"/harvest*.log | tail -3
fi
[ "$(jq -r .id "$tmp/side.jsonl" | sort | uniq -d)" = "" ] || fail "a prompt was written twice"
echo "the side task finished 8 prompts over $run training run(s)"

"$PW" infer --checkpoint "$tmp/ckpt" --prompts "$tmp/prompts.jsonl" --out "$tmp/dedicated.jsonl" \
  --max-tokens 12 --ranks 1 >"$tmp/dedicated.log" 2>&1 || { fail "the dedicated infer run"; tail -5 "$tmp/dedicated.log"; }
[ "$(tokens_by_id "$tmp/side.jsonl")" = "$(tokens_by_id "$tmp/dedicated.jsonl")" ] ||
  { fail "the side task's tokens differ from the dedicated run's";
    diff <(tokens_by_id "$tmp/side.jsonl") <(tokens_by_id "$tmp/dedicated.jsonl") | head -6; }

# A bad option fails the run before training starts, naming the task.
"$PW" "${train[@]}" --steps 1 --side-task "infer:prompts=$tmp/prompts.jsonl" >"$tmp/bad.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "prompts= and out= are required" "$tmp/bad.log" ||
  { fail "a side task without out= (rc $rc)"; tail -3 "$tmp/bad.log"; }

if [ "$failures" -gt 0 ]; then
  echo "$failures harvest infer check(s) failed"
  exit 1
fi
echo "all harvest infer checks passed"
