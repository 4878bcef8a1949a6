#!/usr/bin/env bash
# Decoding speed of the model families side by side: the yardstick's shape
# (examples/small.toml: width 256, 8 layers, 8 heads, seq 128, byte-level
# vocabulary) as the byte GPT and as a Llama-family model (rotary positions,
# RMSNorm, SwiGLU of width 688, 4 key/value heads for 8 query heads, no
# biases: the same shape train_bench.sh's llama rows use), one rank,
# replicate, fp32 KV cache, prepacked weights, SEQS sequences at once
# (default 128), greedy, MAX_TOKENS (48) per prompt. The two run
# alternately, REPEATS times (3); the table gives each run's decode tok/s
# (passes with only decode rows) with the model math of those passes as
# GFLOP/s and as a share of the core's GEMM rate (the limit: OpenBLAS's
# GEMM at the yardstick's shape, split_backward_torch_bench BM_Gemm/small,
# with the kernels the runtime uses, measured before and after, the higher
# counts), and the medians' ratio against the aim (Llama >= 0.90x the byte
# GPT).
#
# Usage: bench/family_infer_bench.sh [path/to/pipewright]   (quiet machine: no build, no tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
SEQS=${SEQS:-128}
MAX_TOKENS=${MAX_TOKENS:-48}
REPEATS=${REPEATS:-3}
LLAMA=(--set model.position=rope --set model.norm=rmsnorm --set model.mlp=swiglu --set model.d_ff=688
       --set model.n_kv_heads=4 --set model.bias=false)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=$((2 * SEQS)); (( n > $(wc -l <"$root/examples/prompts.jsonl") )) && n=$(wc -l <"$root/examples/prompts.jsonl")
head -n "$n" "$root/examples/prompts.jsonl" >"$tmp/prompts.jsonl"
gemm_bench=${GEMM_BENCH:-$(dirname "$(dirname "$(dirname "$PW")")")/bench/split_backward_torch_bench}
# The OpenBLAS core the runtime picks for itself (it re-executes with
# OPENBLAS_CORETYPE when the library misdetects the CPU): the GEMM reference uses the same.
head -n 1 "$tmp/prompts.jsonl" >"$tmp/core.jsonl"
core=$(OPENBLAS_VERBOSE=2 "$PW" infer --config "$root/examples/small.toml" --prompts "$tmp/core.jsonl" \
         --out "$tmp/core-out.jsonl" --max-tokens 1 2>&1 | grep -o 'Core: [A-Za-z0-9]*' | tail -1 | sed 's/Core: //' || true)
gemm_rate() {  # the best of 2 GFLOP/s of BM_Gemm/small, or 0 without the bench
  [[ -x $gemm_bench ]] || { echo 0; return; }
  OPENBLAS_CORETYPE=${core:-${OPENBLAS_CORETYPE:-}} OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$gemm_bench" \
    --benchmark_filter='BM_Gemm/small' --benchmark_repetitions=2 --benchmark_format=csv 2>/dev/null >"$tmp/gemm.csv" || true
  local col
  col=$(head -1 "$tmp/gemm.csv" | tr ',' '\n' | grep -n 'GFLOP/s' | cut -d: -f1 || true)
  [[ -n $col ]] && grep '^"BM_Gemm/small' "$tmp/gemm.csv" | grep -v '_mean\|_median\|_stddev\|_cv' | cut -d, -f"$col" |
    awk '$1 > m { m = $1 } END { printf "%.1f\n", m + 0 }' || echo 0
}
run() {  # run NAME ARGS...: "decode-tok/s decode-GFLOP/s" of one run
  local name=$1
  shift
  rm -f "$tmp/$name.jsonl"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$PW" infer --config "$root/examples/small.toml" "$@" \
    --prompts "$tmp/prompts.jsonl" --out "$tmp/$name.jsonl" --ranks 1 --mode replicate --memory-budget 256MiB \
    --max-sequences "$SEQS" --max-tokens "$MAX_TOKENS" --summary-json "$tmp/$name.json" >"$tmp/$name.log" 2>&1 ||
    { echo "family_infer_bench: $name failed:"; tail -5 "$tmp/$name.log"; exit 1; }
  jq -r '"\(.decode_tokens_per_s) \(.decode_flops_per_s / 1e9)"' "$tmp/$name.json"
}
before=$(gemm_rate)
echo "one rank, $SEQS sequences, $n prompts x $MAX_TOKENS tokens, fp32 KV, prepacked; decode tok/s (GFLOP/s)"
gpt=() llama=() gflops=()
for r in $(seq 1 "$REPEATS"); do
  read -r g gf < <(run gpt)
  read -r l lf < <(run llama "${LLAMA[@]}")
  gpt+=("$g") llama+=("$l") gflops+=("$gf" "$lf")
  printf "repeat %d: byte GPT %.0f (%.1f)  llama %.0f (%.1f)  (%.2fx)\n" "$r" "$g" "$gf" "$l" "$lf" \
    "$(awk -v a="$l" -v b="$g" 'BEGIN { print a / b }')"
done
after=$(gemm_rate)
gemm=$(printf '%s\n%s\n' "$before" "$after" | awk '$1 > m { m = $1 } END { print m + 0 }')
if awk -v g="$gemm" 'BEGIN { exit !(g > 0) }'; then
  printf "limit: the core's GEMM rate %.1f GFLOP/s (OpenBLAS %s); decode model math %s of it\n" "$gemm" "${core:-default}" \
    "$(printf '%s\n' "${gflops[@]}" | awk -v g="$gemm" 'NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
       END { printf "%.0f-%.0f %%", 100 * lo / g, 100 * hi / g }')"
else
  echo "limit: no GEMM reference ($gemm_bench missing)"
fi
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mg=$(median "${gpt[@]}") ml=$(median "${llama[@]}")
ratio=$(awk -v a="$ml" -v b="$mg" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.90 ? "met" : "MISSED") }')
printf "median: byte GPT %.0f tok/s, llama %.0f tok/s: %sx (aim >= 0.90x: %s)\n" "$mg" "$ml" "$ratio" "$verdict"
