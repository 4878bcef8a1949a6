#!/usr/bin/env bash
# Side tasks that misbehave, against training: the same 2-rank training as
# bench/harvest_bench.sh (examples/tiny.toml, 1F1B, 4 microbatches of 8,
# gated policy, the task pinned to rank 1) with a task that
#   behaves     image (a well-behaved built-in: the usual margin)
#   spins       image:spin_after=20 — from its 21st step on, a step that
#               burns CPU forever and never acknowledges a pause
#   floods      a command writing to stdout as fast as it can (`yes`)
#   forks       a command that starts two busy children
#   grows       a command whose four children together pass its memory limit
#               (idle policy: gated, they would not get the CPU to get there)
# and prints, per row, the in-run paired slowdown of training with its 95%
# interval (--harvest-paired: the task is allowed and held in alternating
# blocks of PAIRED steps in the same run), whether training finished, and
# the summary's "misbehaved" / "failed" lines. Also as JSON lines with
# JSON=1. docs/reliability.md has the figures and the command.
#
# Usage: bench/misbehaving_tasks.sh [path/to/pipewright]
# Env:   STEPS (default 80), PAIRED (2), CASES ("behaves spins floods forks grows"),
#        MEMORY_LIMIT for "grows" (@mem=, default 48MiB: two 20 MB children fit,
#        four do not), KEEP_TMP=1.
set -euo pipefail

die() { echo "misbehaving_tasks: error: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pw=${1:-$root/build/src/cli/pipewright}
[[ -x $pw ]] || die "pipewright binary not found or not executable: $pw (usage: $0 [path/to/pipewright])"
config=$root/examples/tiny.toml
STEPS=${STEPS:-80}
PAIRED=${PAIRED:-2}
CASES=${CASES:-"behaves spins floods forks grows"}
MEMORY_LIMIT=${MEMORY_LIMIT:-48MiB}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/misbehaving_tasks.XXXXXX")
if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "work dir: $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi
head -c 2000000 /dev/urandom > "$tmp/random.bin"

# The task flags of each case.
task_flags() {
  case $1 in
    behaves) echo "--side-task image@rank=1" ;;
    spins) echo "--side-task image:spin_after=20@rank=1" ;;
    floods) echo "--side-task-cmd yes@rank=1" ;;
    forks) echo "--side-task-cmd sh -c 'yes >/dev/null & yes >/dev/null & wait'@rank=1" ;;
    grows) local hog="dd if=/dev/zero bs=20M count=1 2>/dev/null | sleep 600"
           echo "--side-task-cmd $hog & $hog & $hog & $hog & wait@rank=1@mem=$MEMORY_LIMIT" ;;
    *) die "unknown case '$1' (cases: behaves spins floods forks grows)" ;;
  esac
}

run_case() {
  local name=$1 flags rc=0
  flags=$(task_flags "$name")
  local -a task_args
  if [[ $flags == --side-task-cmd* ]]; then
    task_args=(--side-task-cmd "${flags#--side-task-cmd }")
  else
    task_args=(--side-task "${flags#--side-task }")
  fi
  # "grows" runs under the idle policy: gated, its children get too little
  # CPU in 80 steps' bubbles to pass the limit (they are stopped outside them).
  local policy=gated
  [[ $name == grows ]] && policy=idle
  echo "misbehaving_tasks: $name ($policy) ..." >&2
  "$pw" train --config "$config" --pp 2 --schedule 1f1b --microbatches 4 --microbatch-size 8 \
    --steps "$STEPS" --seed 1234 --data "$tmp/random.bin" --eval-batches 0 --timeout 1200 \
    "${task_args[@]}" --harvest-policy "$policy" --harvest-paired "$PAIRED" \
    --metrics-out "$tmp/$name.jsonl" > "$tmp/$name.log" 2>&1 || rc=$?
  local slowdown
  slowdown=$(grep -o "in-run slowdown on rank 1: [^;]*;\?" "$tmp/$name.log" | head -1 | sed 's/in-run slowdown on rank 1: //')
  local notes
  # A command task's note quotes its whole command line; keep what it says.
  notes=$(grep -hoE "side task (.* )?(misbehaved|failed): .*" "$tmp/$name.log" | head -2 |
    sed -E 's/^(side task (.* )?(misbehaved|failed): )cmd: .*: (its [0-9]+ process)/\1\4/' | tr '\n' ' ' | cut -c1-220 || true)
  local trained="yes"
  ((rc == 0)) || trained="no (exit $rc)"
  printf "%-8s %-10s %-60s %s\n" "$name" "$trained" "${slowdown:-none}" "${notes:-}"
  if [[ ${JSON:-0} == 1 ]]; then
    jq -nc --arg case "$name" --argjson exit "$rc" --arg slowdown "${slowdown:-}" --arg notes "${notes:-}" \
      '{case: $case, training_exit: $exit, slowdown: $slowdown, notes: $notes}'
  fi
}

printf "%-8s %-10s %-60s %s\n" case trained "in-run slowdown of training (95% CI)" "what was contained"
for c in $CASES; do run_case "$c"; done
