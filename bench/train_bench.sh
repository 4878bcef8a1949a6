#!/usr/bin/env bash
# Training benchmark (issue 4, "Performance"): trains the fixed yardstick model
# on 2 pipeline ranks (one thread each, OMP/OpenBLAS/MKL pinned to 1) with
# 1F1B, ZB-H1 and interleaved 1F1B (2 chunks per rank), plus the same model in
# one process (pp = 1, one thread), and prints one table:
#
#   tok/s         mean over steps 5..19 (tokens / total time of those steps)
#   1-proc tok/s  the pp = 1 run (same model, same batch), and the ratio
#   iter ms       measured iteration time (8192 tokens / tok/s), steps 5..19
#   sim ms        `pipewright schedule sim` makespan on this run's own
#                 --profile-out costs (compute only, free communication)
#   overhead      iter / sim - 1: executor, p2p, optimizer and all-reduce time
#                 the compute-only simulation does not contain (target <= 5%)
#   fwd/bwd GF/s  model FLOPs of a microbatch's forward (2 x GEMM MACs +
#                 attention matmuls + LM head) over the summed per-stage mean F
#                 time; backward = 2 x forward FLOPs over summed B (or I + W)
#   % GEMM        those rates over split_backward_torch_bench's F / B GFLOP/s
#                 (one block, d 512, 2048 rows, one thread: the core's
#                 GEMM-bound rate for this code path)
#
# and ZB-H1's measured speedup over 1F1B against the simulator's prediction.
#
# Model: vocab 256, width 256, 8 layers, 8 heads, seq 128, untied head
# (examples/small.toml); microbatch 8, 8 microbatches/step, AdamW (the CLI's
# default optimizer), fp32, random bytes, 20 steps (0..19), steps 0..4 discarded.
#
# Usage: bench/train_bench.sh [path/to/pipewright]
# Env:   STEPS (default 20), SKIP (default 5), KEEP_TMP=1 keeps the work dir.
# Needs: bash, coreutils, awk, grep, sed. No python.
set -euo pipefail

die() { echo "train_bench: error: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pw=${1:-$root/build/src/cli/pipewright}
[[ -x $pw ]] || die "pipewright binary not found or not executable: $pw (usage: $0 [path/to/pipewright])"
pw=$(cd "$(dirname "$pw")" && pwd)/$(basename "$pw")
config=$root/examples/small.toml
[[ -f $config ]] || die "model config not found: $config"
gemm_bench=${GEMM_BENCH:-$(dirname "$(dirname "$(dirname "$pw")")")/bench/split_backward_torch_bench}

STEPS=${STEPS:-20}
SKIP=${SKIP:-5}
(( STEPS > SKIP )) || die "STEPS ($STEPS) must exceed SKIP ($SKIP)"
PP=2 M=8 MBS=8 SEQ=128 D=256 L=8 V=256
TOKENS_PER_STEP=$((M * MBS * SEQ))

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/train_bench.XXXXXX")
if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "work dir: $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi
head -c 4000000 /dev/urandom > "$tmp/random.bin"
# Run a private copy: the build tree may be relinked while the benchmark runs.
cp "$pw" "$tmp/pipewright" || die "cannot copy $pw"
pw=$tmp/pipewright

# train NAME PP [extra args...]: writes $tmp/NAME.{jsonl,profile.json,log}
train() {
  local name=$1 pp=$2; shift 2
  echo "train_bench: training $name (pp=$pp, $STEPS steps) ..." >&2
  if ! "$pw" train --config "$config" --pp "$pp" --microbatches $M --microbatch-size $MBS \
      --steps "$STEPS" --seed 1234 --data "$tmp/random.bin" --eval-batches 0 --timeout 1200 \
      --metrics-out "$tmp/$name.jsonl" --profile-out "$tmp/$name.profile.json" "$@" \
      > "$tmp/$name.log" 2>&1; then
    tail -20 "$tmp/$name.log" >&2
    die "pipewright train failed for $name"
  fi
  [[ -s $tmp/$name.jsonl ]] || die "no metrics written for $name"
}

# mean_tps FILE: tokens/s over steps >= SKIP (total tokens / total time)
mean_tps() {
  awk -v skip="$SKIP" -v tok="$TOKENS_PER_STEP" '
    { s = $0; sub(/.*"step": */, "", s); sub(/[,}].*/, "", s)
      t = $0; sub(/.*"tokens_per_s": */, "", t); sub(/[,}].*/, "", t)
      if (s + 0 >= skip && t + 0 > 0) { n++; sec += tok / t } }
    END { if (n == 0) exit 1; printf "%.1f\n", n * tok / sec }' "$1" \
    || die "no timed steps (>= $SKIP) in $1"
}

# sum_kind FILE KIND: sum over stages of the mean time of KIND ("F", "B", "I", "W")
sum_kind() {
  { grep -o "\"$2\": *[0-9.eE+-]*" "$1" || true; } | awk -F: '{ s += $2 } END { printf "%.6f\n", s + 0 }'
}

# makespan SCHEDULE PROFILE [extra args]
makespan() {
  local s=$1 prof=$2; shift 2
  local out
  out=$("$pw" schedule sim -s "$s" -p $PP -m $M --cost-file "$prof" --json "$@") \
    || die "schedule sim failed for $s"
  grep -o '"makespan": *[0-9.eE+-]*' <<< "$out" | head -1 | sed 's/.*: *//' \
    || die "no makespan in sim output for $s"
}

# Model FLOPs of one microbatch's forward (GEMMs as 2 x MACs, attention
# QK^T and AV without causal savings, LM head), as in split_backward_torch_bench.
fwd_flops=$(awk -v r=$((MBS * SEQ)) -v b=$MBS -v t=$SEQ -v d=$D -v l=$L -v v=$V \
  'BEGIN { printf "%.0f\n", l * (2 * r * 12 * d * d + 4 * b * t * t * d) + 2 * r * d * v }')

# --- the core's GEMM-bound rate (one thread) -----------------------------------
gemm_f="" gemm_b=""
if [[ -x $gemm_bench ]]; then
  echo "train_bench: measuring one-thread block GFLOP/s with $(basename "$gemm_bench") ..." >&2
  if "$gemm_bench" --benchmark_filter='BM_Block/(F|B)/' --benchmark_format=csv \
      > "$tmp/gemm.csv" 2> "$tmp/gemm.err"; then
    # csv: name,iterations,real_time,cpu_time,time_unit,...,GFLOP/s (counter column)
    col=$(head -1 "$tmp/gemm.csv" | tr ',' '\n' | grep -n 'GFLOP/s' | cut -d: -f1 || true)
    if [[ -n $col ]]; then
      gemm_f=$(grep '^"BM_Block/F/' "$tmp/gemm.csv" | cut -d, -f"$col" | head -1)
      gemm_b=$(grep '^"BM_Block/B/' "$tmp/gemm.csv" | cut -d, -f"$col" | head -1)
      gemm_f=$(awk -v x="$gemm_f" 'BEGIN { printf "%.2f", x }')
      gemm_b=$(awk -v x="$gemm_b" 'BEGIN { printf "%.2f", x }')
    fi
  fi
fi
[[ -n $gemm_f ]] || echo "train_bench: warning: no GEMM reference (split_backward_torch_bench missing or failed); % GEMM columns left blank" >&2

# --- runs ----------------------------------------------------------------------
train single 1 --schedule 1f1b
train 1f1b 2 --schedule 1f1b
train zb-h1 2 --schedule zb-h1
train interleaved-1f1b 2 --schedule interleaved-1f1b --chunks 2

single_tps=$(mean_tps "$tmp/single.jsonl")

declare -A tps iter sim ovh fg bg
for s in 1f1b zb-h1 interleaved-1f1b; do
  prof=$tmp/$s.profile.json
  [[ -s $prof ]] || die "no profile written for $s"
  extra=()
  [[ $s == interleaved-1f1b ]] && extra=(--chunks 2)
  tps[$s]=$(mean_tps "$tmp/$s.jsonl")
  iter[$s]=$(awk -v tok=$TOKENS_PER_STEP -v t="${tps[$s]}" 'BEGIN { printf "%.1f", 1000 * tok / t }')
  sim[$s]=$(makespan "$s" "$prof" "${extra[@]}" | awk '{ printf "%.1f", $1 }')
  ovh[$s]=$(awk -v i="${iter[$s]}" -v m="${sim[$s]}" 'BEGIN { printf "%+.1f", 100 * (i / m - 1) }')
  f=$(sum_kind "$prof" F)
  b=$(sum_kind "$prof" B); i=$(sum_kind "$prof" I); w=$(sum_kind "$prof" W)
  bw=$(awk -v b="$b" -v i="$i" -v w="$w" 'BEGIN { printf "%.6f", b + i + w }')
  fg[$s]=$(awk -v fl="$fwd_flops" -v ms="$f" 'BEGIN { printf "%.2f", (ms > 0) ? fl / ms / 1e6 : 0 }')
  bg[$s]=$(awk -v fl="$fwd_flops" -v ms="$bw" 'BEGIN { printf "%.2f", (ms > 0) ? 2 * fl / ms / 1e6 : 0 }')
done

pct() { [[ -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * a / b }' || echo "-"; }

echo
echo "Training benchmark: vocab $V, width $D, $L layers, 8 heads, seq $SEQ, untied head, fp32, AdamW"
echo "pp=$PP local ranks x 1 thread, $M microbatches of $MBS ($TOKENS_PER_STEP tokens/step), steps $SKIP..$((STEPS - 1)) timed"
echo "single process (pp=1, 1 thread): $single_tps tok/s"
[[ -n $gemm_f ]] && echo "one-thread block GEMM reference (split_backward_torch_bench, d 512): F $gemm_f GFLOP/s, B $gemm_b GFLOP/s"
echo
printf '%-17s %9s %9s %6s %9s %9s %9s %8s %7s %8s %7s\n' \
  schedule "tok/s" "1-proc" "x1p" "iter ms" "sim ms" overhead "fwd GF/s" "%GEMM" "bwd GF/s" "%GEMM"
for s in 1f1b zb-h1 interleaved-1f1b; do
  x=$(awk -v a="${tps[$s]}" -v b="$single_tps" 'BEGIN { printf "%.2f", a / b }')
  printf '%-17s %9s %9s %6s %9s %9s %8s%% %8s %7s %8s %7s\n' \
    "$s" "${tps[$s]}" "$single_tps" "$x" "${iter[$s]}" "${sim[$s]}" "${ovh[$s]}" \
    "${fg[$s]}" "$(pct "${fg[$s]}" "$gemm_f")" "${bg[$s]}" "$(pct "${bg[$s]}" "$gemm_b")"
done
echo
meas=$(awk -v a="${iter[1f1b]}" -v b="${iter[zb-h1]}" 'BEGIN { printf "%.3f", a / b }')
pred=$(awk -v a="${sim[1f1b]}" -v b="${sim[zb-h1]}" 'BEGIN { printf "%.3f", a / b }')
echo "ZB-H1 speedup over 1F1B: measured ${meas}x, predicted ${pred}x (sim makespans on each run's measured costs)"
