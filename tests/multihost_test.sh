#!/usr/bin/env bash
# Multi-host runs on one machine: two Linux network namespaces are the two
# "hosts", joined by a veth pair (host A 10.77.0.1/24, host B 10.77.0.2/24),
# each with two ranks. `pipewright train` pp=2 x dp=2 and `pipewright infer
# --ranks 4` rendezvous over the veth addresses, launched
#   (a) torchrun-style: MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE/LOCAL_RANK/
#       LOCAL_WORLD_SIZE set per process, each started with `ip netns exec`;
#   (b) by Open MPI's mpirun, itself started on host A, reaching host B through
#       an rsh agent that is `ip netns exec` instead of ssh;
# and their losses (train --metrics-out) and outputs (infer results) must
# equal, bit for bit, those of the same job run as local ranks on one host.
# A torchrun-style restart after a rank on host B is killed resumes from the
# shared checkpoint (--resume auto) and reproduces the same losses.
# Each host writes its infer results to its own directory, as to a local
# disk. docs/multihost.md explains the recipe this test follows.
#
# Needs root (network namespaces); without it, or when `ip netns add` fails,
# it says why and exits 77, which ctest reports as skipped.
# Registered with ctest (label multihost). Usage: tests/multihost_test.sh PATH/TO/pipewright
set -uo pipefail
PW=$(realpath "${1:?usage: multihost_test.sh PATH/TO/pipewright}")
root=$(cd "$(dirname "$0")/.." && pwd)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (ip netns); run as root to test multi-host runs"
command -v ip >/dev/null || skip "needs the ip command (Debian package iproute2)"

tmp=$(mktemp -d)
nsA=pwmhA$$ nsB=pwmhB$$          # namespace names: unique per run
ifA=pwvA$$ ifB=pwvB$$            # veth ends (interface names <= 15 chars)
addrA=10.77.0.1 addrB=10.77.0.2
port=29500                       # free: the namespaces are new
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  ip netns del "$nsA" 2>/dev/null  # deleting a namespace deletes its veth end
  ip netns del "$nsB" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# quiet LOG COMMAND...: runs COMMAND in the background (so that the traps run
# at once on INT/TERM, and cleanup stops it), output to LOG; its exit status.
quiet() {
  local log=$1
  shift
  "$@" </dev/null >"$log" 2>&1 &
  pids=($!)
  wait "${pids[0]}"
  local rc=$?
  pids=()
  return $rc
}

# --- the two hosts ---
ip netns add "$nsA" 2>"$tmp/netns.err" ||
  skip "ip netns add failed ($(cat "$tmp/netns.err")); network namespaces are unavailable here"
ip netns add "$nsB" || skip "ip netns add $nsB failed"
{
  ip link add "$ifA" type veth peer name "$ifB" &&
    ip link set "$ifA" netns "$nsA" && ip link set "$ifB" netns "$nsB" &&
    ip -n "$nsA" addr add "$addrA/24" dev "$ifA" && ip -n "$nsB" addr add "$addrB/24" dev "$ifB" &&
    ip -n "$nsA" link set "$ifA" up && ip -n "$nsB" link set "$ifB" up &&
    ip -n "$nsA" link set lo up && ip -n "$nsB" link set lo up
} 2>"$tmp/veth.err" || skip "cannot create the veth pair between the namespaces: $(cat "$tmp/veth.err")"
mkdir -p "$tmp/$nsA" "$tmp/$nsB"  # each host's own "disk" for infer results

# --pin-cpus=false: both "hosts" would pin their local rank 0 to CPU 0.
train_args=(train --config "$root/examples/tiny.toml" --pp 2 --dp 2 --steps 3 --timeout 90 --pin-cpus=false)
head -n 16 "$root/examples/prompts.jsonl" >"$tmp/prompts.jsonl"
# WaS: every forward pass fetches blocks from ranks on both hosts.
infer_args=(infer --prompts "$tmp/prompts.jsonl" --ranks 4 --mode was --memory-budget 16MiB
            --max-tokens 8 --timeout 90)

# step, loss and gradient norm of every step: the comparable part of --metrics-out.
losses() { sed -E 's/.*"grad_norm":([^,]*).*"loss":([^,]*),.*"step":([0-9]+).*/\3 \2 \1/' "$1"; }
# id + generated tokens of every result, sorted by id.
outputs() { cat "$@" | sed -E 's/.*"id":"([^"]*)".*"tokens":(\[[0-9,]*\])\}$/\1 \2/' | sort; }
# Bytes that crossed the link either way: what host A's end sent plus what it
# received (which host fetches whose blocks depends on which ranks got work).
veth_bytes() {
  local d=/sys/class/net/$ifA/statistics
  echo $(($(ip netns exec "$nsA" cat "$d/tx_bytes") + $(ip netns exec "$nsA" cat "$d/rx_bytes")))
}
# served_on_both_hosts NAME: each host's own result file holds a result, so
# ranks on both hosts generated (and the pooled weights crossed the link).
# The shared queue gives every rank its own first chunk (docs/inference.md),
# so with a chunk per rank in the file neither host can be left idle.
served_on_both_hosts() {
  local name=$1 ns
  for ns in "$nsA" "$nsB"; do
    [ -s "$tmp/$ns/$name.jsonl" ] || fail "$name: the ranks on host $ns served no prompt"
  done
}

# same NAME KIND: compares a multi-host run's losses/outputs with the local run's.
same() {
  local name=$1 kind=$2 got
  if [ "$kind" = train ]; then
    got=$(losses "$tmp/$name.jsonl")
  else
    served_on_both_hosts "$name"
    got=$(outputs "$tmp/$nsA/$name.jsonl" "$tmp/$nsB/$name.jsonl" 2>/dev/null)
  fi
  if [ -z "$got" ]; then fail "$name: no results"; return; fi
  if [ "$got" != "$(cat "$tmp/local_$kind.txt")" ]; then
    fail "$name differs from the single-host run"
    diff <(echo "$got") "$tmp/local_$kind.txt" | head -10
  else
    echo "ok: $name equals the single-host run ($(echo "$got" | wc -l) lines; ${SECONDS}s in)"
  fi
}

# --- the reference: the same jobs as local ranks on one host ---
if ! quiet "$tmp/local_train.log" "$PW" "${train_args[@]}" --metrics-out "$tmp/local_train.jsonl"; then
  tail -20 "$tmp/local_train.log"; echo "FAIL: the single-host train run failed"; exit 1
fi
losses "$tmp/local_train.jsonl" >"$tmp/local_train.txt"
if ! quiet "$tmp/local_infer.log" "$PW" "${infer_args[@]}" --out "$tmp/local_infer.jsonl"; then
  tail -20 "$tmp/local_infer.log"; echo "FAIL: the single-host infer run failed"; exit 1
fi
outputs "$tmp/local_infer.jsonl" >"$tmp/local_infer.txt"

# --- (a) torchrun-style variables, one process per rank ---
# run_env NAME COMMAND...: ranks 0,1 on host A and 2,3 on host B; the store on A.
# With EXPECT=fail every rank must exit non-zero instead of 0.
run_env() {
  local name=$1 r ns rc=0 code bytes_before
  shift
  bytes_before=$(veth_bytes)
  pids=()
  for r in 0 1 2 3; do
    ns=$nsA; [ "$r" -ge 2 ] && ns=$nsB
    ip netns exec "$ns" env MASTER_ADDR=$addrA MASTER_PORT=$port RANK=$r WORLD_SIZE=4 \
      LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 timeout 120 "$@" \
      </dev/null >"$tmp/$name.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2 3; do
    wait "${pids[$r]}"
    code=$?
    if [ "${EXPECT:-ok}" = fail ]; then
      [ "$code" -ne 0 ] || { rc=1; fail "$name: rank $r exited 0 in a job that lost a rank"; }
    elif [ "$code" -ne 0 ]; then
      rc=$code; fail "$name: rank $r exited $code"; tail -5 "$tmp/$name.rank$r.log"
    fi
  done
  pids=()
  [ $(($(veth_bytes) - bytes_before)) -gt 100000 ] || fail "$name: under 100 kB crossed the veth link"
  return $rc
}
run_env env_train "$PW" "${train_args[@]}" --metrics-out "$tmp/env_train.jsonl" && same env_train train

# A restart across the hosts, as torchrun --max-restarts does it: rank 3 (on
# host B) is killed after two steps, once they are checkpointed (PIPEWRIGHT_FAULT,
# test-only), and every rank of the job fails within the collective timeout.
# torchrun's agents then rerun the same command with TORCHELASTIC_RESTART_COUNT=1;
# --resume auto finds the checkpoint of step 2 in the shared --checkpoint-dir
# and the run ends with the single-host run's loss.
restart_args=("${train_args[@]}" --checkpoint-dir "$tmp/ckpt" --checkpoint-every 1 --resume auto
              --collective-timeout 5 --metrics-out "$tmp/env_restart.jsonl")
EXPECT=fail run_env env_killed env PIPEWRIGHT_FAULT=kill:rank=3,step=2 "$PW" "${restart_args[@]}"
grep -q "PIPEWRIGHT_FAULT: rank 3 kills itself" "$tmp/env_killed.rank3.log" || fail "env_killed: rank 3 was not killed"
grep -q "no checkpoint in $tmp/ckpt yet: from step 0" "$tmp/env_killed.rank0.log" ||
  fail "env_killed: the first attempt did not start from step 0 under --resume auto"
if run_env env_restart env TORCHELASTIC_RESTART_COUNT=1 PIPEWRIGHT_FAULT=kill:rank=3,step=2 "$PW" "${restart_args[@]}"; then
  grep -q "resume auto: the checkpoint at step 2 in $tmp/ckpt" "$tmp/env_restart.rank0.log" ||
    fail "env_restart: did not resume from the checkpoint of step 2"
  got=$(losses "$tmp/env_restart.jsonl")
  if [ "$got" = "$(tail -n 1 "$tmp/local_train.txt")" ]; then
    echo "ok: env_restart resumed at step 2 and equals the single-host run (${SECONDS}s in)"
  else
    fail "env_restart: losses after the restart '$got' differ from the single-host run's last step"
  fi
fi
# Each host's ranks append to that host's own file (named after the namespace).
run_env env_infer sh -c 'exec "$0" "$@" --out "'"$tmp"'/$(ip netns identify)/env_infer.jsonl"' \
  "$PW" "${infer_args[@]}" && same env_infer infer

# --- (b) Open MPI's mpirun, started on host A ---
if ! command -v mpirun >/dev/null; then
  fail "mpirun not found: install Debian's openmpi-bin (scripts/install-deps.sh) to test mpirun launches"
else
  # Open MPI starts the daemons of other hosts with its rsh agent (ssh
  # normally) as `AGENT HOST COMMAND...`; here the "host" is a namespace.
  cat >"$tmp/netns-rsh" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in $addrA) ns=$nsA ;; $addrB) ns=$nsB ;; *) echo "netns-rsh: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
  chmod +x "$tmp/netns-rsh"
  # Root needs --allow-run-as-root; --bind-to none: both "hosts" share this
  # machine's cores. pipewright reads OMPI_COMM_WORLD_* and the -x variables.
  mpi=(ip netns exec "$nsA" timeout 150 mpirun --allow-run-as-root --host "$addrA:2,$addrB:2" -np 4
       --bind-to none --mca plm_rsh_agent "$tmp/netns-rsh"
       -x MASTER_ADDR=$addrA -x MASTER_PORT=$port -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1)
  run_mpi() {
    local name=$1 bytes_before
    shift
    bytes_before=$(veth_bytes)
    if ! quiet "$tmp/$name.log" "${mpi[@]}" "$@"; then
      fail "$name: mpirun failed"; tail -20 "$tmp/$name.log"; return 1
    fi
    [ $(($(veth_bytes) - bytes_before)) -gt 100000 ] || fail "$name: under 100 kB crossed the veth link"
  }
  run_mpi mpi_train "$PW" "${train_args[@]}" --metrics-out "$tmp/mpi_train.jsonl" && same mpi_train train
  run_mpi mpi_infer sh -c 'exec "$0" "$@" --out "'"$tmp"'/$(ip netns identify)/mpi_infer.jsonl"' \
    "$PW" "${infer_args[@]}" && same mpi_infer infer
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures multi-host check(s) failed"
  exit 1
fi
echo "all multi-host checks passed"
