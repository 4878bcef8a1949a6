#!/usr/bin/env bash
# Decoding speed of the model families side by side: the yardstick's shape
# (examples/small.toml: width 256, 8 layers, 8 heads, seq 128, byte-level
# vocabulary) as the byte GPT and as a Llama-family model (rotary positions,
# RMSNorm, SwiGLU of width 688, 4 key/value heads for 8 query heads, no
# biases: the same shape train_bench.sh's llama rows use), one rank,
# replicate, fp32 KV cache, prepacked weights, SEQS sequences at once
# (default 128), greedy, MAX_TOKENS (48) per prompt. The two run
# alternately, REPEATS times (3); the table gives each run's decode tok/s
# (passes with only decode rows) and the medians' ratio against the aim
# (Llama >= 0.90x the byte GPT).
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
run() {  # run NAME ARGS...: decode tok/s of one run
  local name=$1
  shift
  rm -f "$tmp/$name.jsonl"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$PW" infer --config "$root/examples/small.toml" "$@" \
    --prompts "$tmp/prompts.jsonl" --out "$tmp/$name.jsonl" --ranks 1 --mode replicate --memory-budget 256MiB \
    --max-sequences "$SEQS" --max-tokens "$MAX_TOKENS" --summary-json "$tmp/$name.json" >"$tmp/$name.log" 2>&1 ||
    { echo "family_infer_bench: $name failed:"; tail -5 "$tmp/$name.log"; exit 1; }
  jq -r '.decode_tokens_per_s' "$tmp/$name.json"
}
echo "one rank, $SEQS sequences, $n prompts x $MAX_TOKENS tokens, fp32 KV, prepacked; decode tok/s"
gpt=() llama=()
for r in $(seq 1 "$REPEATS"); do
  g=$(run gpt) l=$(run llama "${LLAMA[@]}")
  gpt+=("$g") llama+=("$l")
  printf "repeat %d: byte GPT %.0f  llama %.0f  (%.2fx)\n" "$r" "$g" "$l" "$(awk -v a="$l" -v b="$g" 'BEGIN { print a / b }')"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mg=$(median "${gpt[@]}") ml=$(median "${llama[@]}")
ratio=$(awk -v a="$ml" -v b="$mg" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.90 ? "met" : "MISSED") }')
printf "median: byte GPT %.0f tok/s, llama %.0f tok/s: %sx (aim >= 0.90x: %s)\n" "$mg" "$ml" "$ratio" "$verdict"
