#!/usr/bin/env bash
# Training benchmark: the yardstick model (examples/small.toml: vocab 256,
# width 256, 8 layers, 8 heads, seq 128, untied head; 8 microbatches of 8,
# fp32, AdamW, random bytes) trained side by side, in one run, as:
#
#   pp=1            one process (the reference; N x its tok/s is the
#                   bubble-free bound for N ranks)
#   1f1b zb-h1      pp=2 pipelines, one built-in family each
#   zb-v interleaved-1f1b (2 chunks per rank)
#   auto            pp=2 --schedule auto --layers-per-stage auto
#   dp=2            pp=1 x dp=2 (data parallel, the pipeline's alternative)
#   llama-pp1 llama-1f1b
#                   the same shape as a Llama-family model (rotary
#                   positions, RMSNorm, SwiGLU of width 688, 4 key/value
#                   heads for 8 query heads, no biases: docs/models.md) at
#                   pp=1 and pp=2; the table's last line is its tok/s over
#                   the byte GPT's at each
#
# every run with local ranks of one thread (OMP/OpenBLAS/MKL pinned to 1).
# The configurations run interleaved, REPEATS times (default 3): the machine
# is shared and its speed drifts by minutes, so each repeat sees every
# configuration at nearly the same moment. Per run: tokens/s over the steps
# from SKIP on (total tokens / total time); the table shows the median run.
#
# Columns:
#   tok/s, x pp=1     median tok/s and its ratio to pp=1's median
#   of bound          tok/s / (ranks x pp=1 tok/s): the share of the
#                     bubble-free bound
#   bubble meas/pred  the executor's measured bubble ratio (median over the
#                     timed steps) and the simulator's prediction (analytic
#                     costs, as the runtime predicts it)
#   sim on profile    the simulator's bubble ratio on the run's own measured
#                     costs (--profile-out): what is left is the executor's
#   F / B GF/s        model FLOPs of a microbatch's forward (2 x GEMM MACs +
#                     attention matmuls + LM head) over the summed per-stage
#                     mean F time; backward = 2 x forward FLOPs over the
#                     summed B (or I + W); "%" of the one-thread GEMM rate
#                     (split_backward_torch_bench BM_Gemm/small: the
#                     yardstick's own GEMM shape, same OpenBLAS kernels,
#                     best of 3). The header also gives the rate each of two
#                     threads keeps when both CPUs multiply at once: twice
#                     its share of the alone rate bounds what 2 ranks can
#                     gain over one process on this machine.
#   mem meas/pred     per rank, the largest step peak of LibTorch tensor
#                     bytes against the simulator's peak (static +
#                     activations + boundary buffers), MiB
#   I+W/B             split-backward runs: the summed per-layer I + W of
#                     the run's profile over the summed per-layer B of
#                     1f1b's in the same repeat (the zero-bubble papers
#                     assume 1.00); auto: its own launch measurement
#
# MODE=families runs pp=1, every built-in family at pp=2 (gpipe, 1f1b,
# interleaved-1f1b and looped-bfs with 2 chunks, zb-h1, zb-h2, zb-v,
# dualpipe-v) and auto instead of the list above. Quiet check, every mode:
# before the runs the share of CPU time others used over 3 s (/proc/stat),
# and the one-thread GEMM rate before and after the runs: others above
# 10 % of the CPUs or a GEMM rate that moved more than 5 % mark the table
# "NOT QUIET" (its figures are then not to be quoted).
#
# Usage: bench/train_bench.sh [path/to/pipewright]
# Env:   REPEATS (3), STEPS (8), SKIP (2), ONLY ("pp1 zb-h1": a subset), MODE (families),
#        KEEP_TMP=1 keeps the work dir.
# Needs: bash, coreutils, util-linux (taskset), awk, grep, sed. No python.
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

REPEATS=${REPEATS:-3}
STEPS=${STEPS:-8}
SKIP=${SKIP:-2}
(( STEPS > SKIP )) || die "STEPS ($STEPS) must exceed SKIP ($SKIP)"
(( REPEATS >= 1 )) || die "REPEATS must be at least 1"
M=8 MBS=8 SEQ=128 D=256 L=8 V=256
TOKENS_PER_STEP=$((M * MBS * SEQ))

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/train_bench.XXXXXX")
if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "work dir: $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi
head -c 4000000 /dev/urandom > "$tmp/random.bin"
# Run a private copy: the build tree may be relinked while the benchmark
# runs. The front end hands train to pipewright-runtime beside it.
cp "$pw" "$tmp/pipewright" || die "cannot copy $pw"
runtime=$(dirname "$pw")/pipewright-runtime
[[ -x $runtime ]] || die "no $runtime beside $pw: build it (scripts/build.sh)"
cp "$runtime" "$tmp/pipewright-runtime" || die "cannot copy $runtime"
pw=$tmp/pipewright

LLAMA="--set model.position=rope --set model.norm=rmsnorm --set model.mlp=swiglu --set model.d_ff=688 \
--set model.n_kv_heads=4 --set model.bias=false"
# name | ranks | arguments
configs=(
  "pp1|1|--pp 1 --schedule 1f1b"
  "1f1b|2|--pp 2 --schedule 1f1b"
  "zb-h1|2|--pp 2 --schedule zb-h1"
  "zb-v|2|--pp 2 --schedule zb-v"
  "interleaved-1f1b|2|--pp 2 --schedule interleaved-1f1b --chunks 2"
  "auto|2|--pp 2 --schedule auto --layers-per-stage auto"
  "dp2|2|--pp 1 --dp 2 --schedule 1f1b"
  "llama-pp1|1|--pp 1 --schedule 1f1b $LLAMA"
  "llama-1f1b|2|--pp 2 --schedule 1f1b $LLAMA"
)
if [[ ${MODE:-} == families ]]; then
  configs=("pp1|1|--pp 1 --schedule 1f1b")
  for family in gpipe 1f1b interleaved-1f1b looped-bfs zb-h1 zb-h2 zb-v dualpipe-v; do
    chunks=""
    [[ $family == interleaved-1f1b || $family == looped-bfs ]] && chunks=" --chunks 2"
    configs+=("$family|2|--pp 2 --schedule $family$chunks")
  done
  configs+=("auto|2|--pp 2 --schedule auto --layers-per-stage auto")
elif [[ -n ${MODE:-} ]]; then
  die "MODE='$MODE': the only mode is 'families'"
fi
if [[ -n ${ONLY:-} ]]; then
  kept=()
  for c in "${configs[@]}"; do [[ " $ONLY " == *" ${c%%|*} "* ]] && kept+=("$c"); done
  configs=("${kept[@]}")
  (( ${#configs[@]} > 0 )) || die "ONLY='$ONLY' matches no configuration"
fi

# run NAME REPEAT ARGS...: writes $tmp/NAME.REPEAT.{jsonl,profile.json,log}
run() {
  local name=$1 rep=$2; shift 2
  local out=$tmp/$name.$rep
  # shellcheck disable=SC2068
  if ! "$pw" train --config "$config" $@ --microbatches $M --microbatch-size $MBS \
      --steps "$STEPS" --seed 1234 --data "$tmp/random.bin" --eval-batches 0 --timeout 1200 \
      --metrics-out "$out.jsonl" --profile-out "$out.profile.json" > "$out.log" 2>&1; then
    tail -20 "$out.log" >&2
    die "pipewright train failed for $name (repeat $rep)"
  fi
  [[ -s $out.jsonl ]] || die "no metrics written for $name"
}

# tps FILE: tokens/s over steps >= SKIP (total tokens / total time)
tps() {
  awk -v skip="$SKIP" '
    { s = $0; sub(/.*"step": */, "", s); sub(/[,}].*/, "", s)
      t = $0; sub(/.*"tokens_per_s": */, "", t); sub(/[,}].*/, "", t)
      if (s + 0 >= skip && t + 0 > 0) { n++; sec += 1 / t } }
    END { if (n == 0) exit 1; printf "%.1f\n", n / sec }' "$1" \
    || die "no timed steps (>= $SKIP) in $1"
}

# field_median FILE KEY: median of a numeric field over steps >= SKIP
field_median() {
  awk -v skip="$SKIP" -v key="\"$2\": *" '
    { s = $0; sub(/.*"step": */, "", s); sub(/[,}].*/, "", s)
      if (s + 0 < skip || $0 !~ key) next
      v = $0; sub(".*" key, "", v); sub(/[,}].*/, "", v); x[n++] = v + 0 }
    END { if (n == 0) { print "nan"; exit }
          for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
          printf "%.4f\n", (n % 2) ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }' "$1"
}

# array_max FILE KEY: per rank, the max over all steps of an array field, "a/b" in MiB
array_max() {
  awk -v key="\"$2\": *\\\\[" '
    $0 ~ key { v = $0; sub(".*" key, "", v); sub(/\].*/, "", v)
      k = split(v, a, ","); if (k > n) n = k
      for (i = 1; i <= k; i++) if (a[i] + 0 > m[i]) m[i] = a[i] + 0 }
    END { for (i = 1; i <= n; i++) printf "%s%.0f", (i > 1 ? "/" : ""), m[i] / 1048576; print "" }' "$1"
}

# sum_kind FILE KIND: sum over stages of the mean time of KIND ("F", "B", "I", "W")
sum_kind() {
  # The stages table only (the per-layer table repeats the same time).
  sed -n '/"stages"/,/\]/p' "$1" | { grep -o "\"$2\": *[0-9.eE+-]*" || true; } |
    awk -F: '{ s += $2 } END { printf "%.6f\n", s + 0 }'
}

median() { sort -g | awk '{ x[n++] = $1 } END { print (n % 2) ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }'; }

# Model FLOPs of one microbatch's forward (GEMMs as 2 x MACs, attention
# QK^T and AV without causal savings, LM head), as in split_backward_torch_bench.
fwd_flops=$(awk -v r=$((MBS * SEQ)) -v b=$MBS -v t=$SEQ -v d=$D -v l=$L -v v=$V \
  'BEGIN { printf "%.0f\n", l * (2 * r * 12 * d * d + 4 * b * t * t * d) + 2 * r * d * v }')

# --- the core's GEMM rate, with the OpenBLAS kernels training uses -------------
core=$(OPENBLAS_VERBOSE=2 "$pw" train --config "$config" --pp 1 --steps 1 --eval-batches 0 \
         --data "$tmp/random.bin" 2>&1 | grep -o 'Core: [A-Za-z0-9]*' | tail -1 | sed 's/Core: //' || true)
gemm="" gemm_two=""
# gemm_rate CPU OUT: BM_Gemm/small GFLOP/s on one pinned thread, best of 3 repetitions
gemm_rate() {
  OPENBLAS_CORETYPE=${core:-${OPENBLAS_CORETYPE:-}} taskset -c "$1" "$gemm_bench" \
    --benchmark_filter='BM_Gemm/small' --benchmark_repetitions=3 --benchmark_format=csv > "$2" 2> "$2.err" || return 0
  local col
  col=$(head -1 "$2" | tr ',' '\n' | grep -n 'GFLOP/s' | cut -d: -f1 || true)
  [[ -n $col ]] || return 0
  grep '^"BM_Gemm/small' "$2" | grep -v '_mean\|_median\|_stddev\|_cv' | cut -d, -f"$col" |
    awk '$1 > m { m = $1 } END { if (m > 0) printf "%.1f\n", m }'
}
cpus=($(taskset -pc $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' | head -2))
if [[ -x $gemm_bench ]] && command -v taskset > /dev/null && (( ${#cpus[@]} >= 1 )); then
  echo "train_bench: measuring the one-thread GEMM rate (OpenBLAS core ${core:-default}), alone and two at once ..." >&2
  gemm=$(gemm_rate "${cpus[0]%%-*}" "$tmp/gemm1.csv")
  # Two threads on two CPUs at once: what one core keeps when the other one
  # works too (shared caches, memory bandwidth, the host's scheduling). 2x
  # this share is the most two ranks can reach over one process here.
  c0=${cpus[0]%%-*}; c1=${cpus[0]#*-}; [[ ${#cpus[@]} -ge 2 ]] && c1=${cpus[1]%%-*}
  if [[ $c0 != "$c1" ]]; then
    gemm_rate "$c1" "$tmp/gemm2b.csv" > "$tmp/gemm2b.rate" &
    other=$!
    a=$(gemm_rate "$c0" "$tmp/gemm2a.csv")
    wait "$other" || true
    b=$(cat "$tmp/gemm2b.rate")
    [[ -n $a && -n $b ]] && gemm_two=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (a + b) / 2 }')
  fi
fi
[[ -n $gemm ]] || echo "train_bench: warning: no GEMM reference (split_backward_torch_bench missing or failed); % columns left blank" >&2

# busy_share SECONDS: the share of all CPUs' time spent busy over SECONDS
# (nothing of ours runs meanwhile: what others use).
busy_share() {
  local a b
  a=$(awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
  sleep "$1"
  b=$(awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); d = y[2] - x[2];
                                   printf "%.2f\n", (d > 0 ? (y[1] - x[1]) / d : 0) }'
}
others_busy=$(busy_share 3)

# --- runs, interleaved -----------------------------------------------------------
for ((rep = 1; rep <= REPEATS; rep++)); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name ranks args <<< "$c"
    echo "train_bench: repeat $rep/$REPEATS: $name ..." >&2
    run "$name" "$rep" "$args"
  done
done

# --- quiet check: load and the GEMM rate after the runs -------------------------
gemm_after=""
[[ -n $gemm ]] && gemm_after=$(gemm_rate "${cpus[0]%%-*}" "$tmp/gemm3.csv")
quiet="quiet"
awk -v a="$others_busy" 'BEGIN { exit !(a > 0.10) }' && quiet="NOT QUIET"
[[ -n $gemm && -n $gemm_after ]] &&
  awk -v a="$gemm" -v b="$gemm_after" 'BEGIN { d = a / b - 1; if (d < 0) d = -d; exit !(d > 0.05) }' && quiet="NOT QUIET"

# layer_sum FILE KIND: sum over the profile's per-layer table of KIND's time
layer_sum() {
  sed -n '/"layers"/,/\]/p' "$1" | { grep -o "\"$2\": *[0-9.eE+-]*" || true; } |
    awk -F: '{ s += $2 } END { printf "%.6f\n", s + 0 }'
}

pct() { [[ -n $2 && $1 != - ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * a / b }' || echo "-"; }

declare -A med best_rep
for c in "${configs[@]}"; do
  IFS='|' read -r name ranks args <<< "$c"
  : > "$tmp/$name.tps"
  for ((rep = 1; rep <= REPEATS; rep++)); do echo "$(tps "$tmp/$name.$rep.jsonl") $rep" >> "$tmp/$name.tps"; done
  med[$name]=$(cut -d' ' -f1 "$tmp/$name.tps" | median)
  # The run closest to the median speaks for the configuration's other columns.
  best_rep[$name]=$(awk -v m="${med[$name]}" '{ d = $1 - m; if (d < 0) d = -d; if (n++ == 0 || d < bd) { bd = d; r = $2 } } END { print r }' "$tmp/$name.tps")
done

single=${med[pp1]:-}
echo
echo "Training benchmark: vocab $V, width $D, $L layers, 8 heads, seq $SEQ, untied head, fp32, AdamW"
echo "$M microbatches of $MBS ($TOKENS_PER_STEP tokens/step), steps $SKIP..$((STEPS - 1)) timed, $REPEATS interleaved repeats (median)"
[[ -n $gemm ]] && echo "one-thread GEMM rate (split_backward_torch_bench BM_Gemm/small, OpenBLAS ${core:-default}, best of 3): $gemm GFLOP/s"
echo "quiet check: $quiet (others used $(awk -v a="$others_busy" 'BEGIN { printf "%.0f%%", 100 * a }') of the CPUs before the runs; GEMM rate ${gemm:-?} GFLOP/s before, ${gemm_after:-?} after)"
[[ -n $gemm_two ]] && echo "two threads at once on two CPUs: $gemm_two GFLOP/s each ($(pct "$gemm_two" "$gemm") of alone: two ranks can reach at most $(awk -v a="$gemm_two" -v b="$gemm" 'BEGIN { printf "%.2f", 2 * a / b }')x one process here)"
echo
printf '%-17s %8s %7s %8s %14s %8s %9s %5s %9s %5s %15s %7s\n' \
  run "tok/s" "x pp=1" "of bound" "bubble m/p" "sim prof" "F GF/s" "%" "B GF/s" "%" "mem MiB m/p" "I+W/B"
for c in "${configs[@]}"; do
  IFS='|' read -r name ranks args <<< "$c"
  f=$tmp/$name.${best_rep[$name]}
  x="-" bound="-"
  if [[ -n $single ]]; then
    x=$(awk -v a="${med[$name]}" -v b="$single" 'BEGIN { printf "%.2f", a / b }')
    bound=$(awk -v a="${med[$name]}" -v b="$single" -v n="$ranks" 'BEGIN { printf "%.0f%%", 100 * a / (n * b) }')
  fi
  bm=$(field_median "$f.jsonl" bubble_ratio_measured)
  bp=$(field_median "$f.jsonl" bubble_ratio_predicted)
  bubble=$(awk -v m="$bm" -v p="$bp" 'BEGIN { printf "%.1f/%.1f%%", 100 * m, 100 * p }')
  simb="-"
  if [[ $name != pp1 && $name != dp2 && $name != llama-pp1 ]]; then
    sched=${name#llama-}
    # auto's note: "schedule auto: measured costs (...); zb-v 2.41 s/step (...)"
    [[ $name == auto ]] && sched=$(grep -o '); [a-z0-9-]* [0-9.]* s/step' "$f.log" | head -1 | awk '{ print $2 }' || true)
    extra=()
    [[ $name == interleaved-1f1b || $name == looped-bfs ]] && extra=(--chunks 2)
    simb=$("$pw" schedule sim -s "$sched" -p 2 -m $M --cost-file "$f.profile.json" --json "${extra[@]}" 2>/dev/null |
             grep -o '"bubble_ratio": *[0-9.eE+-]*' | head -1 | sed 's/.*: *//' |
             awk '{ printf "%.1f%%", 100 * $1 }' || true)
    [[ -n $simb ]] || simb="-"
  fi
  fs=$(sum_kind "$f.profile.json" F)
  bs=$(awk -v b="$(sum_kind "$f.profile.json" B)" -v i="$(sum_kind "$f.profile.json" I)" \
         -v w="$(sum_kind "$f.profile.json" W)" 'BEGIN { printf "%.6f", b + i + w }')
  fg=$(awk -v fl="$fwd_flops" -v ms="$fs" 'BEGIN { printf "%.1f", (ms > 0) ? fl / ms / 1e6 : 0 }')
  bg=$(awk -v fl="$fwd_flops" -v ms="$bs" 'BEGIN { printf "%.1f", (ms > 0) ? 2 * fl / ms / 1e6 : 0 }')
  # (The FLOP count is the byte GPT's: no rate for the Llama-shaped rows.)
  [[ $name == llama-* ]] && fg="-" bg="-"
  mem="$(array_max "$f.jsonl" peak_allocated_bytes) / $(array_max "$f.jsonl" peak_bytes_predicted)"
  split="-"
  if [[ $name == auto ]]; then
    split=$(grep -o 'I + W = [0-9.]*x B' "$f.log" | head -1 | sed 's/I + W = //; s/ B//' || true)
    [[ -n $split ]] || split="-"
  elif [[ -n ${best_rep[1f1b]:-} ]]; then
    iw=$(awk -v i="$(layer_sum "$f.profile.json" I)" -v w="$(layer_sum "$f.profile.json" W)" 'BEGIN { print i + w }')
    fused=$(layer_sum "$tmp/1f1b.${best_rep[$name]}.profile.json" B)
    split=$(awk -v a="$iw" -v b="$fused" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }')
  fi
  printf '%-17s %8.0f %7s %8s %14s %8s %9s %5s %9s %5s %15s %7s\n' "$name" "${med[$name]}" "$x" "$bound" \
    "$bubble" "$simb" "$fg" "$(pct "$fg" "$gemm")" "$bg" "$(pct "$bg" "$gemm")" "$mem" "$split"
done
for pair in "pp1 llama-pp1" "1f1b llama-1f1b"; do
  read -r gpt llama <<< "$pair"
  [[ -n ${med[$gpt]:-} && -n ${med[$llama]:-} ]] || continue
  echo "Llama-family over the byte GPT, $gpt: $(awk -v a="${med[$llama]}" -v b="${med[$gpt]}" 'BEGIN { printf "%.2fx", a / b }')"
done
echo
echo "per-run tok/s (repeat order):"
for c in "${configs[@]}"; do
  name=${c%%|*}
  printf '  %-17s %s\n' "$name" "$(sort -k2 -n "$tmp/$name.tps" | cut -d' ' -f1 | tr '\n' ' ')"
done
