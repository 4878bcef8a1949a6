#!/usr/bin/env bash
# A hung rank brings the job down within --collective-timeout, naming the
# culprit (docs/processes.md, "Timeouts and failures"): rank 1 of `train`
# (pp=2) and of `infer --ranks 2` is stopped with SIGSTOP; the job must
# exit non-zero within the timeout plus the launcher's grace (and some
# slack for a loaded machine) — well before the 60 s default — and its
# stderr must name rank 1 as stopped. Registered with ctest.
# Usage: tests/hang_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: hang_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
job=
cleanup() {
  [ -n "$job" ] && kill -KILL "$job" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  train'; then
  echo "hang checks skipped: this pipewright has no train command"
  exit 0
fi
timeout_s=3
# Exit within timeout + grace (2 s) + slack; the default (60 s) would not.
bound_s=20

# rank_pid LAUNCHER RANK: the pid of the launcher's child whose RANK is RANK.
rank_pid() {
  local p
  for p in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# hang NAME READY ARGS...: starts pipewright ARGS, waits until the shell
# command READY succeeds (the ranks are at work), stops rank 1, and checks
# the exit time and the message.
hang() {
  local name=$1 ready=$2
  shift 2
  "$PW" "$@" >"$tmp/$name.log" 2>&1 &
  job=$!
  local waited=0
  until eval "$ready"; do
    sleep 0.1
    waited=$((waited + 1))
    if [ "$waited" -gt 1200 ] || ! kill -0 "$job" 2>/dev/null; then
      fail "$name: never reached '$ready'"
      tail -5 "$tmp/$name.log"
      kill -KILL "$job" 2>/dev/null
      wait "$job"
      job=
      return
    fi
  done
  local victim
  victim=$(rank_pid "$job" 1) || { fail "$name: no rank 1 among the launcher's children"; return; }
  kill -STOP "$victim"
  local start=$SECONDS
  # Bounded wait: the test itself never hangs.
  while kill -0 "$job" 2>/dev/null && [ $((SECONDS - start)) -le $((bound_s + 30)) ]; do sleep 0.2; done
  local took=$((SECONDS - start))
  if kill -0 "$job" 2>/dev/null; then
    fail "$name: still running $took s after rank 1 was stopped"
    kill -KILL "$job" 2>/dev/null
  fi
  wait "$job"
  local rc=$?
  job=
  [ "$rc" -ne 0 ] || fail "$name: exited 0 with a stopped rank"
  [ "$took" -le "$bound_s" ] || fail "$name: took $took s to exit (bound $bound_s s)"
  grep -qF "rank 1 (pid $victim) was stopped (process state T: SIGSTOP or a debugger) and hung the job" \
    "$tmp/$name.log" || { fail "$name: stderr does not name rank 1 as stopped"; tail -5 "$tmp/$name.log"; }
  kill -0 "$victim" 2>/dev/null && fail "$name: the stopped rank (pid $victim) outlived the job"
  echo "$name: exit $rc after $took s"
}

hang train 'grep -q "\[rank 0\] step" "$tmp/train.log"' train --config "$root/examples/tiny.toml" --pp 2 --steps 100000 \
  --eval-batches 0 --collective-timeout "$timeout_s"

if "$PW" --help | grep -q '^  infer'; then
  # Lengths 4..160 tokens: results arrive one after another.
  for i in $(seq 1 40); do
    echo "{\"id\": $i, \"prompt\": \"prompt number $i\", \"max_tokens\": $((4 * i))}"
  done >"$tmp/prompts.jsonl"
  # WaS: every rank fetches blocks from the other all the time. Ready: the
  # first results are written (past the rendezvous, whose own bound is 60 s).
  hang infer '[ -s "$tmp/out.jsonl" ]' infer --ranks 2 --mode was --memory-budget 16MiB --max-tokens 200 \
    --prompts "$tmp/prompts.jsonl" --out "$tmp/out.jsonl" --collective-timeout "$timeout_s"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures hang check(s) failed"
  exit 1
fi
echo "all hang checks passed"
