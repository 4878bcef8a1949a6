#!/usr/bin/env bash
# Seeded fault harness (docs/reliability.md, "Faults"). Each trial injects
# one fault into a small local job and checks what the issue asks:
#
#   train-kill     SIGKILL a rank of `train` at a random moment
#   infer-kill     SIGKILL a rank of `infer` at a random moment
#   train-stop     SIGSTOP a rank of `train` (a hang)
#   infer-stop     SIGSTOP a rank of `infer`
#   ckpt-crash     kill the whole job (launcher and ranks) during a
#                  checkpoint write (PIPEWRIGHT_FAULT=kill-job:…,at=checkpoint
#                  or at=manifest, runtime/fault_injection.h)
#   disk-full      a rank's disk fills up after a random step (PIPEWRIGHT_FAULT=
#                  disk-full:…, faked at the os/ seam, os/fault_seam.h): its
#                  next checkpoint write must fail the job naming the rank and
#                  the reason, and leave the previous checkpoint resumable
#   train-restart  SIGKILL a rank of `train --max-restarts 1` at a random
#                  moment: the job must restart itself and finish
#   link-down      take the veth link between two "hosts" down (network
#                  namespaces, one rank each, torchrun-style; root only,
#                  skipped otherwise)
#   host-restart   SIGKILL a rank on one of those two hosts, then rerun both
#                  as torchrun --max-restarts would (--resume auto): the
#                  rerun must end with the uninterrupted run's loss (root only)
#
# Checks per trial: every rank exits within the collective timeout + grace
# + slack; the culprit rank is named in stderr (kill: "rank R (pid P) was
# killed by signal SIGKILL"; stop: "rank R (pid P) was stopped"); the
# previous checkpoint is still loadable (`train --resume` finishes) and the
# resumed run's final loss equals an uninterrupted run's (full precision,
# --metrics-out); no finished inference result is lost (every complete line
# of --out before the resume is still there, and the resume completes every
# prompt exactly once).
#
# Usage: tests/fault_harness.sh PATH/TO/pipewright
#   SEED=N (default 1)  TRIALS=N trials of each fault (default 1)
#   FAULTS="train-kill infer-kill …" (default: all)  RESULTS=FILE: one TSV
#   line per trial (fault seed rank exit_s culprit lost reproduced).
# Exits 1 when any check fails. Registered with ctest (label faults).
set -uo pipefail
export LC_ALL=C
PW=${1:?usage: fault_harness.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
SEED=${SEED:-1}
TRIALS=${TRIALS:-1}
FAULTS=${FAULTS:-"train-kill infer-kill train-stop infer-stop ckpt-crash disk-full train-restart link-down host-restart"}
RESULTS=${RESULTS:-}
RANDOM=$SEED
tmp=$(mktemp -d)
job=
namespaces=
cleanup() {
  [ -n "$job" ] && kill -KILL "$job" 2>/dev/null
  pkill -KILL -P $$ 2>/dev/null
  for ns in $namespaces; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$PW" --help | grep -q '^  train'; then
  echo "fault harness skipped: this pipewright has no train command"
  exit 0
fi
has_infer=0
"$PW" --help | grep -q '^  infer' && has_infer=1

collective_timeout=3
grace=2     # the launcher's SIGTERM -> SIGKILL grace
slack=10    # start-up of the dying ranks' teardown on a loaded 2-core machine
bound=$((collective_timeout + grace + slack))
steps=30
train_args=(train --config "$root/examples/tiny.toml" --pp 2 --steps "$steps" --eval-batches 0
  --collective-timeout "$collective_timeout")
# One sequence at a time: many small passes (≈ 2 s of generation), results
# one after another.
infer_args=(infer --ranks 2 --memory-budget 16MiB --max-sequences 1 --collective-timeout "$collective_timeout")
prompt_count=120
for i in $(seq 1 "$prompt_count"); do
  echo "{\"id\": $i, \"prompt\": \"prompt $i\", \"max_tokens\": $((10 + i % 40))}"
done >"$tmp/prompts.jsonl"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# Loss of the last line of a --metrics-out file, at full precision.
final_loss() { tail -n 1 "$1" 2>/dev/null | jq -r '.loss' 2>/dev/null; }

# rank_pid LAUNCHER RANK: the pid of the launcher's child whose RANK is RANK.
rank_pid() {
  local p tries=0
  while [ "$tries" -lt 100 ]; do
    for p in $(pgrep -P "$1"); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2"; then
        echo "$p"
        return 0
      fi
    done
    tries=$((tries + 1))
    sleep 0.1
  done
  return 1
}

# wait_until CMD: polls the shell command CMD until it succeeds (0) or the
# job ended (1) or 120 s passed (1).
wait_until() {
  local n=0
  until eval "$1"; do
    kill -0 "$job" 2>/dev/null || return 1
    n=$((n + 1))
    [ "$n" -gt 1200 ] && return 1
    sleep 0.1
  done
}

# wait_exit START [LIMIT]: waits for $job at most LIMIT seconds (default:
# the bound + 30 s) from START; sets rc and took.
wait_exit() {
  local start=$1 limit=${2:-$((bound + 30))}
  while kill -0 "$job" 2>/dev/null && awk -v t="$(elapsed "$start")" -v l="$limit" 'BEGIN { exit !(t < l) }'; do
    sleep 0.1
  done
  took=$(elapsed "$start")
  if kill -0 "$job" 2>/dev/null; then
    # A hang past every bound: keep the threads' stacks for whoever debugs it.
    local stacks=${TMPDIR:-/tmp}/pipewright-hang-$fault-$job.txt
    if command -v gdb >/dev/null && timeout 60 gdb -p "$job" -batch -ex "thread apply all bt" >"$stacks" 2>&1; then
      echo "$fault: pid $job still ran after $took s; its threads' stacks: $stacks"
    fi
  fi
  kill -KILL "$job" 2>/dev/null
  wait "$job" 2>/dev/null
  rc=$?
  job=
}

# record FAULT RANK EXIT_S CULPRIT LOST REPRODUCED
record() {
  printf '%-14s seed %-6s rank %s  exit %7s  culprit %-3s  lost %-16s  reproduced %s\n' \
    "$1" "$trial_seed" "$2" "$3$([ "$3" = - ] || echo ' s')" "$4" "$5" "$6"
  [ -n "$RESULTS" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$trial_seed" "$2" "$3" "$4" "$5" "$6" >>"$RESULTS"
  return 0
}

# check_gone PIDS...: no rank outlived the job.
check_gone() {
  local p n
  for p in "$@"; do
    [ -n "$p" ] || continue
    n=0
    # PR_SET_PDEATHSIG and SIGKILL are asynchronous: allow a moment.
    while kill -0 "$p" 2>/dev/null && [ "$n" -lt 20 ]; do sleep 0.1; n=$((n + 1)); done
    kill -0 "$p" 2>/dev/null && fail "$fault: rank pid $p outlived the job"
  done
  return 0
}

# Reference: the uninterrupted run's final loss.
"$PW" "${train_args[@]}" --metrics-out "$tmp/reference.jsonl" >"$tmp/reference.log" 2>&1 ||
  { fail "the uninterrupted reference run failed"; tail -5 "$tmp/reference.log"; }
reference=$(final_loss "$tmp/reference.jsonl")
echo "reference: $steps steps, final loss $reference"

# resume_check DIR: `train --resume DIR` finishes and reproduces the
# reference loss; sets lost and reproduced.
resume_check() {
  local dir=$1
  if [ ! -f "$dir/manifest.json" ]; then
    # Killed before the first checkpoint: nothing was committed, so nothing is lost.
    lost=none
    reproduced=n/a
    return
  fi
  "$PW" "${train_args[@]}" --resume "$dir" --metrics-out "$tmp/resumed.jsonl" >"$tmp/resume.log" 2>&1
  if [ $? -ne 0 ]; then
    fail "$fault: train --resume $dir failed"
    tail -3 "$tmp/resume.log"
    lost="checkpoint-unloadable"
    reproduced=no
    return
  fi
  lost=none
  local step
  step=$(jq -r '.step' "$dir/manifest.json")
  if [ "$step" -ge "$steps" ]; then
    reproduced=n/a  # the run had finished its last checkpoint
  elif [ "$(final_loss "$tmp/resumed.jsonl")" = "$reference" ]; then
    reproduced=yes
  else
    reproduced=no
    fail "$fault: resumed from step $step, final loss $(final_loss "$tmp/resumed.jsonl") != $reference"
  fi
}

# strike READY DESCRIPTION SIGNAL RANK DELAY_MS: once the shell command
# READY succeeds, waits DELAY_MS and sends SIGNAL to rank RANK of $job (its
# pid in ${pids[RANK]}); sets victim and start. Returns 1 (after a FAIL)
# when the job ended first.
strike() {
  if ! wait_until "$1"; then
    fail "$fault: the job ended before $2"
    tail -3 "$tmp/$fault.log"
    wait_exit "$(now)"
    return 1
  fi
  sleep "0.$(printf %03d "$5")"
  victim=${pids[$4]}
  start=$(now)
  kill -"$3" "$victim"
}

# judge SIGNAL RANK: waits for the struck job and checks that it failed
# within the bound, that no rank outlived it, and that stderr names the
# victim as the culprit; sets culprit.
judge() {
  wait_exit "$start"
  check_gone "${pids[@]}"
  culprit=no
  [ "$rc" -ne 0 ] || fail "$fault: exited 0"
  awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t <= b) }' || fail "$fault: took $took s to exit (bound $bound s)"
  local expected="rank $2 (pid $victim) was killed by signal SIGKILL"
  [ "$1" = STOP ] && expected="rank $2 (pid $victim) was stopped"
  grep -qF "$expected" "$tmp/$fault.log" && culprit=yes
  [ "$culprit" = yes ] || { fail "$fault: stderr does not name '$expected'"; tail -3 "$tmp/$fault.log"; }
}

# A train trial: SIGNAL (KILL or STOP) to a random rank at a random moment.
train_trial() {
  local sig=$1
  shift
  local dir=$tmp/ckpt.$fault.$t
  local after=$((RANDOM % (steps / 3)))   # step lines seen before the fault
  local delay_ms=$((RANDOM % 300))
  local rank=$((RANDOM % 2))
  "$PW" "${train_args[@]}" --checkpoint-dir "$dir" --checkpoint-every 2 "$@" >"$tmp/$fault.log" 2>&1 &
  job=$!
  pids=("$(rank_pid "$job" 0)" "$(rank_pid "$job" 1)")
  strike "[ \$(grep -c '\\[rank 0\\] step' '$tmp/$fault.log') -gt $after ]" "step $after" "$sig" "$rank" \
    "$delay_ms" || return
  culprit=no
  if [ "$fault" = train-restart ]; then
    # The job restarts itself: the time to exit is the time until the
    # launcher has stopped every rank and says it restarts; then it must finish.
    wait_until "grep -qF 'restart 1 of 1 (--max-restarts)' '$tmp/$fault.log'" || fail "$fault: no restart reported"
    local detected
    detected=$(elapsed "$start")
    wait_exit "$start"
    took=$detected
    check_gone "${pids[@]}"
    [ "$rc" -eq 0 ] || { fail "$fault: --max-restarts 1 exited $rc"; tail -3 "$tmp/$fault.log"; }
    grep -qF "rank $rank (pid $victim) was killed by signal SIGKILL" "$tmp/$fault.log" && culprit=yes
    [ "$culprit" = yes ] || fail "$fault: stderr does not name rank $rank"
    lost=none
    if [ "$(final_loss "$tmp/restart.jsonl")" = "$reference" ]; then reproduced=yes; else
      reproduced=no
      fail "$fault: final loss $(final_loss "$tmp/restart.jsonl") != $reference"
    fi
    record "$fault" "$rank" "$took" "$culprit" "$lost" "$reproduced"
    return
  fi
  judge "$sig" "$rank"
  resume_check "$dir"
  record "$fault" "$rank" "$took" "$culprit" "$lost" "$reproduced"
}

# An infer trial: SIGNAL to a random rank once a random number of results
# is written; then a rerun resumes.
infer_trial() {
  local sig=$1 mode=$2
  local out=$tmp/out.$fault.$t.jsonl
  local after=$((1 + RANDOM % 15))
  local delay_ms=$((RANDOM % 300))
  local rank=$((RANDOM % 2))
  "$PW" "${infer_args[@]}" --mode "$mode" --prompts "$tmp/prompts.jsonl" --out "$out" >"$tmp/$fault.log" 2>&1 &
  job=$!
  pids=("$(rank_pid "$job" 0)" "$(rank_pid "$job" 1)")
  strike "[ -f '$out' ] && [ \$(wc -l <'$out') -ge $after ]" "$after results" "$sig" "$rank" "$delay_ms" || return
  judge "$sig" "$rank"
  # Complete lines written before the resume must all survive it.
  grep -a '}$' "$out" | sort >"$tmp/before.txt"
  "$PW" "${infer_args[@]}" --mode "$mode" --prompts "$tmp/prompts.jsonl" --out "$out" >"$tmp/infer-resume.log" 2>&1 ||
    { fail "$fault: the resume failed"; tail -3 "$tmp/infer-resume.log"; }
  sort "$out" >"$tmp/after.txt"
  local missing duplicates ids
  missing=$(comm -23 "$tmp/before.txt" "$tmp/after.txt" | wc -l)
  ids=$(jq -r '.id' "$out" 2>/dev/null | sort)
  duplicates=$(echo "$ids" | uniq -d | wc -l)
  lost=none
  [ "$missing" -eq 0 ] || { lost="$missing-results"; fail "$fault: $missing finished results lost by the resume"; }
  [ "$duplicates" -eq 0 ] || { lost="$duplicates-duplicates"; fail "$fault: $duplicates prompt ids twice"; }
  [ "$(echo "$ids" | uniq | wc -l)" -eq "$prompt_count" ] ||
    { lost="incomplete"; fail "$fault: the resume did not complete every prompt"; }
  record "$fault" "$rank" "$took" "$culprit" "$lost" "n/a"
}

# The whole job killed inside a checkpoint write, at a random step and point.
crash_trial() {
  local dir=$tmp/ckpt.$fault.$t
  local step=$((2 + RANDOM % (steps - 2)))
  local rank=$((RANDOM % 2))
  local at=checkpoint
  if [ $((RANDOM % 2)) -eq 0 ]; then
    at=manifest
    rank=0   # world rank 0 writes the manifest
  fi
  PIPEWRIGHT_FAULT="kill-job:rank=$rank,step=$step,at=$at" \
    "$PW" "${train_args[@]}" --checkpoint-dir "$dir" --checkpoint-every 1 >"$tmp/$fault.log" 2>&1 &
  job=$!
  pids=("$(rank_pid "$job" 0)" "$(rank_pid "$job" 1)")
  wait_exit "$(now)"
  check_gone "${pids[@]}"
  # The launcher itself was killed (bash: 128 + SIGKILL); the rank's own
  # line about the fault may die with the launcher's pipe.
  [ "$rc" -eq 137 ] || { fail "$fault: exited $rc, not killed"; tail -3 "$tmp/$fault.log"; }
  local manifest_step
  manifest_step=$(jq -r '.step' "$dir/manifest.json" 2>/dev/null)
  [ "$manifest_step" = $((step - 1)) ] || fail "$fault: manifest at step '$manifest_step', want $((step - 1))"
  resume_check "$dir"
  # Every process died at once (SIGKILL): there is no time to exit to measure.
  record "$fault" "$rank" "-" "n/a" "$lost" "$reproduced"
}

# A rank's disk fills up after a random step; checkpoints every 2 steps.
# The next checkpoint write fails: the job must exit non-zero naming the rank
# and the full disk, the manifest must still name the checkpoint before the
# fault, and resuming from it must reproduce the reference loss.
disk_full_trial() {
  local dir=$tmp/ckpt.$fault.$t
  local step=$((2 + RANDOM % (steps - 6)))
  local rank=$((RANDOM % 2))
  PIPEWRIGHT_FAULT="disk-full:rank=$rank,step=$step" \
    "$PW" "${train_args[@]}" --checkpoint-dir "$dir" --checkpoint-every 2 >"$tmp/$fault.log" 2>&1 &
  job=$!
  pids=("$(rank_pid "$job" 0)" "$(rank_pid "$job" 1)")
  # The time to exit counts from the failed write (the fault itself comes
  # up to two steps earlier and harms nothing until then).
  wait_until "grep -qF 'No space left on device' '$tmp/$fault.log'"
  local start
  start=$(now)
  wait_exit "$start"
  check_gone "${pids[@]}"
  [ "$rc" -ne 0 ] || fail "$fault: exited 0 with a full disk"
  local culprit=no
  grep -qE "training failed: rank $rank \(pid [0-9]+\) exited with code 1" "$tmp/$fault.log" &&
    grep -qF "No space left on device" "$tmp/$fault.log" && culprit=yes
  [ "$culprit" = yes ] || { fail "$fault: stderr does not name rank $rank and the full disk"; tail -4 "$tmp/$fault.log"; }
  local manifest_step
  manifest_step=$(jq -r '.step' "$dir/manifest.json" 2>/dev/null)
  [ "$manifest_step" = $((step / 2 * 2)) ] || fail "$fault: manifest at step '$manifest_step', want $((step / 2 * 2))"
  resume_check "$dir"
  record "$fault" "$rank" "$took" "$culprit" "$lost" "$reproduced"
}

# make_hosts: two "hosts" (network namespaces joined by a veth pair, as in
# tests/multihost_test.sh); sets nsA nsB ifA addrA. Returns 1, saying why
# $fault is skipped, when they cannot be made.
make_hosts() {
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "$fault: skipped (needs root and iproute2 for network namespaces)"
    return 1
  fi
  nsA=pwfA$$ nsB=pwfB$$ ifA=pwfvA$$ addrA=10.78.0.1
  local ifB=pwfvB$$ addrB=10.78.0.2
  namespaces="$nsA $nsB"
  if ! { ip netns add "$nsA" && ip netns add "$nsB" && ip link add "$ifA" type veth peer name "$ifB" &&
    ip link set "$ifA" netns "$nsA" && ip link set "$ifB" netns "$nsB" &&
    ip -n "$nsA" addr add "$addrA/24" dev "$ifA" && ip -n "$nsB" addr add "$addrB/24" dev "$ifB" &&
    ip -n "$nsA" link set "$ifA" up && ip -n "$nsB" link set "$ifB" up &&
    ip -n "$nsA" link set lo up && ip -n "$nsB" link set lo up; } 2>"$tmp/netns.err"; then
    echo "$fault: skipped (network namespaces unavailable: $(head -c 200 "$tmp/netns.err"))"
    drop_hosts
    return 1
  fi
}
drop_hosts() {
  for ns in $namespaces; do ip netns del "$ns" 2>/dev/null; done
  namespaces=
}

# start_hosts LOG ARGS...: world rank 0 on host A and 1 on host B, started
# torchrun-style with `pipewright ARGS...` (LOG.0.log, LOG.1.log); sets
# pids (ip netns exec and env exec, so these are pipewright's own).
start_hosts() {
  local log=$1 r ns
  shift
  pids=()
  for r in 0 1; do
    ns=$nsA
    [ "$r" = 1 ] && ns=$nsB
    ip netns exec "$ns" env MASTER_ADDR=$addrA MASTER_PORT=29500 RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 \
      LOCAL_WORLD_SIZE=1 "$PW" "$@" >"$log.$r.log" 2>&1 &
    pids+=($!)
  done
}

# The link between the two hosts (one rank of `train` each) goes down at a
# random moment. No pipewright launcher sees both ranks: each must fail
# within the collective timeout naming the rank across the link, and the
# last checkpoint must still resume (on this host).
link_trial() {
  make_hosts || return
  local dir=$tmp/ckpt.$fault.$t
  local after=$((RANDOM % (steps / 3)))
  local delay_ms=$((RANDOM % 300))
  start_hosts "$tmp/$fault" "${train_args[@]}" --pin-cpus=false --checkpoint-dir "$dir" --checkpoint-every 2
  local pid0=${pids[0]} pid1=${pids[1]}
  job=$pid0
  if wait_until "[ \$(grep -c '^step' '$tmp/$fault.0.log') -gt $after ]"; then
    sleep "0.$(printf %03d $delay_ms)"
    local start
    start=$(now)
    ip -n "$nsA" link set "$ifA" down
    job=$pid1
    wait_exit "$start"
    local rc1=$rc
    job=$pid0
    wait_exit "$start"
    local culprit=yes
    [ "$rc" -ne 0 ] && [ "$rc1" -ne 0 ] || fail "$fault: a rank exited 0 (rank 0: $rc, rank 1: $rc1)"
    awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t <= b) }' ||
      { fail "$fault: took $took s to exit (bound $bound s)"; tail -n 3 "$tmp/$fault".*.log; }
    # Each rank names the one across the link as the peer it waited for.
    # (p2p: "from rank 1 (world rank 1)"; a collective: "with world rank(s) 1").
    grep -qE "world rank(\(s\))? 1([^0-9]|$)" "$tmp/$fault.0.log" || culprit=no
    grep -qE "world rank(\(s\))? 0([^0-9]|$)" "$tmp/$fault.1.log" || culprit=no
    [ "$culprit" = yes ] || { fail "$fault: a rank does not name its peer"; tail -n 2 "$tmp/$fault".*.log; }
    resume_check "$dir"
    record "$fault" "0-1" "$took" "$culprit" "$lost" "$reproduced"
  else
    fail "$fault: the job ended before step $after"
    tail -3 "$tmp/$fault.0.log"
    kill -KILL "$pid0" "$pid1" 2>/dev/null
  fi
  wait "$pid0" "$pid1" 2>/dev/null
  job=
  drop_hosts
}

# A rank on one of the two hosts is killed at a random moment; the survivor
# must fail within the collective timeout naming it. Then both are started
# again with the same command line, as torchrun --max-restarts reruns it
# (TORCHELASTIC_RESTART_COUNT=1): --resume auto continues from the last
# checkpoint in the shared directory and must end with the reference loss.
host_restart_trial() {
  make_hosts || return
  local dir=$tmp/ckpt.$fault.$t
  local after=$((RANDOM % (steps / 3)))
  local delay_ms=$((RANDOM % 300))
  local rank=$((RANDOM % 2))
  local args=("${train_args[@]}" --pin-cpus=false --checkpoint-dir "$dir" --checkpoint-every 2 --resume auto
              --metrics-out "$tmp/host-restart.jsonl")
  start_hosts "$tmp/$fault" "${args[@]}"
  local survivor=$((1 - rank))
  local survivor_pid=${pids[$survivor]}
  job=${pids[0]}
  if ! strike "[ \$(grep -c '^step' '$tmp/$fault.0.log') -gt $after ]" "step $after" KILL "$rank" "$delay_ms"; then
    kill -KILL "${pids[@]}" 2>/dev/null
    drop_hosts
    return
  fi
  job=$survivor_pid
  wait_exit "$start"
  wait "${pids[$rank]}" 2>/dev/null
  [ "$rc" -ne 0 ] || fail "$fault: rank $survivor exited 0 after rank $rank was killed"
  awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t <= b) }' || fail "$fault: took $took s to exit (bound $bound s)"
  culprit=no
  grep -qE "world rank(\(s\))? $rank([^0-9]|$)" "$tmp/$fault.$survivor.log" && culprit=yes
  [ "$culprit" = yes ] || { fail "$fault: rank $survivor does not name rank $rank"; tail -n 2 "$tmp/$fault.$survivor.log"; }
  local exit_took=$took checkpoint_step=
  [ -f "$dir/manifest.json" ] && checkpoint_step=$(jq -r '.step' "$dir/manifest.json")
  # The rerun is a whole run (up to 30 steps), not a failure: its own limit.
  TORCHELASTIC_RESTART_COUNT=1 start_hosts "$tmp/$fault.rerun" "${args[@]}"
  local rerun_start
  rerun_start=$(now)
  job=${pids[1]}
  wait_exit "$rerun_start" 240
  local rc1=$rc
  job=${pids[0]}
  wait_exit "$rerun_start" 240
  lost=none
  reproduced=no
  if [ "$rc" -ne 0 ] || [ "$rc1" -ne 0 ]; then
    fail "$fault: the rerun failed (rank 0: $rc, rank 1: $rc1)"
    tail -n 3 "$tmp/$fault.rerun".*.log
    lost=rerun-failed
    grep -qi "checkpoint\|manifest\|safetensors" "$tmp/$fault.rerun".*.log && lost=checkpoint-unloadable
  elif [ -n "$checkpoint_step" ] &&
    ! grep -qF "resume auto: the checkpoint at step $checkpoint_step in $dir" "$tmp/$fault.rerun.0.log"; then
    fail "$fault: the rerun did not resume from the checkpoint at step $checkpoint_step"
  elif [ -z "$checkpoint_step" ] && ! grep -qF "no checkpoint in $dir yet: from step 0" "$tmp/$fault.rerun.0.log"; then
    fail "$fault: the rerun did not say it starts from step 0 (no checkpoint was written)"
  elif [ "$(final_loss "$tmp/host-restart.jsonl")" = "$reference" ]; then
    reproduced=yes
  else
    fail "$fault: the rerun ended with loss $(final_loss "$tmp/host-restart.jsonl") != $reference"
  fi
  record "$fault" "$rank" "$exit_took" "$culprit" "$lost" "$reproduced"
  drop_hosts
}

for fault in $FAULTS; do
  for t in $(seq 1 "$TRIALS"); do
    trial_seed=$RANDOM
    RANDOM=$trial_seed
    case $fault in
      train-kill) train_trial KILL ;;
      train-stop) train_trial STOP ;;
      train-restart) train_trial KILL --max-restarts 1 --metrics-out "$tmp/restart.jsonl" ;;
      infer-kill) [ "$has_infer" = 1 ] && infer_trial KILL "$([ $((RANDOM % 2)) -eq 0 ] && echo replicate || echo was)" ;;
      infer-stop) [ "$has_infer" = 1 ] && infer_trial STOP was ;;
      ckpt-crash) crash_trial ;;
      disk-full) disk_full_trial ;;
      link-down) link_trial ;;
      host-restart) host_restart_trial ;;
      *) fail "unknown fault '$fault'" ;;
    esac
  done
done

if [ "$failures" -ne 0 ]; then
  echo "$failures fault check(s) failed (SEED=$SEED)"
  exit 1
fi
echo "all fault checks passed (SEED=$SEED)"
