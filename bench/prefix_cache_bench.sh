#!/usr/bin/env bash
# Prefix caching, on against off, side by side: PROMPTS prompts (default
# 128) that share a PREFIX-token start (96: a system prompt's worth of
# bytes on the byte-level yardstick, examples/small.toml, with a context of
# 256) followed by a question of their own: one of the example prompts'
# first TAIL bytes (16; examples/prompts.jsonl), MAX_TOKENS (32) generated each,
# greedy, RANKS ranks (1; 2 also exercises the queue grouping prompts by
# prefix), replicate.
# The two run alternately, REPEATS times (3). Per run: prompt positions
# computed (prefill), positions the prefix cache supplied, tok/s
# (generated tokens / generation time); then the medians' ratios against
# the aims (prefill >= 5x fewer, tok/s >= 1.8x) and whether every output
# is byte-identical to caching off's. The bound for prefill: every distinct
# prompt position computed once (the start once, each question whole).
#
# Usage: bench/prefix_cache_bench.sh [path/to/pipewright]   (quiet machine: no build, no tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
PROMPTS=${PROMPTS:-128}
PREFIX=${PREFIX:-96}
MAX_TOKENS=${MAX_TOKENS:-32}
TAIL=${TAIL:-16}
REPEATS=${REPEATS:-3}
RANKS=${RANKS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The shared start: PREFIX bytes of Debian's copy of the Apache-2.0 licence
# (a repeated sentence where it is missing); the questions: the example prompts.
system=$(tr -s '\n ' '  ' </usr/share/common-licenses/Apache-2.0 2>/dev/null | head -c "$PREFIX" || true)
(( ${#system} == PREFIX )) || system=$(printf 'You are a careful assistant. %.0s' {1..8} | head -c "$PREFIX")
jq -c --arg s "$system" --argjson t "$TAIL" 'select(.prompt != null) | {id, prompt: ($s + (.prompt | .[0:$t]))}' "$root/examples/prompts.jsonl" |
  head -n "$PROMPTS" >"$tmp/prompts.jsonl"
count=$(wc -l <"$tmp/prompts.jsonl")
# Prompt positions in all, and the fewest any cache computes: the start once
# and every question's bytes.
all=$(jq -r '.prompt | length' "$tmp/prompts.jsonl" | awk '{ s += $1 } END { print s }')
least=$(jq -r '.prompt | length' "$tmp/prompts.jsonl" | awk -v p="$PREFIX" '{ s += $1 - p } END { print s + p }')
run() {  # run NAME on|off: "prefill hits tok/s"
  local name=$1
  rm -f "$tmp/$name.jsonl"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$PW" infer --config "$root/examples/small.toml" --set model.seq_len=256 \
    --prompts "$tmp/prompts.jsonl" --out "$tmp/$name.jsonl" --ranks "$RANKS" --mode replicate \
    --memory-budget 256MiB --max-tokens "$MAX_TOKENS" --prefix-cache "$2" \
    --summary-json "$tmp/$name.json" >"$tmp/$name.log" 2>&1 ||
    { echo "prefix_cache_bench: $name failed:"; tail -5 "$tmp/$name.log"; exit 1; }
  jq -r '"\(.prefill_tokens) \(.prefix_hit_tokens) \(.tokens_per_s)"' "$tmp/$name.json"
}
outputs() { jq -c '[.id, .tokens]' "$1" | sort; }
echo "$count prompts sharing a $PREFIX-token start, $MAX_TOKENS tokens each, $RANKS rank(s), replicate, greedy"
on_tps=() off_tps=() on_pre=() off_pre=() same=yes
for r in $(seq 1 "$REPEATS"); do
  read -r op oh ot < <(run "on$r" on)
  read -r fp _ ft < <(run "off$r" off)
  cmp -s <(outputs "$tmp/on$r.jsonl") <(outputs "$tmp/off$r.jsonl") || same=NO
  on_tps+=("$ot") off_tps+=("$ft") on_pre+=("$op") off_pre+=("$fp")
  printf "repeat %d: on  prefill %6d (cache supplied %6d) %7.1f tok/s | off prefill %6d %7.1f tok/s | %.2fx\n" \
    "$r" "$op" "$oh" "$ot" "$fp" "$ft" "$(awk -v a="$ot" -v b="$ft" 'BEGIN { print a / b }')"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
speed=$(awk -v a="$(median "${on_tps[@]}")" -v b="$(median "${off_tps[@]}")" 'BEGIN { printf "%.2f", a / b }')
fewer=$(awk -v a="$(median "${off_pre[@]}")" -v b="$(median "${on_pre[@]}")" 'BEGIN { printf "%.1f", a / b }')
printf "median: prefill %sx fewer positions (bound %.1fx; aim >= 5x: %s); tok/s %sx caching off (aim >= 1.8x: %s); outputs identical: %s\n" \
  "$fewer" "$(awk -v a="$all" -v b="$least" 'BEGIN { print a / b }')" "$(awk -v r="$fewer" 'BEGIN { print (r >= 5 ? "met" : "MISSED") }')" \
  "$speed" "$(awk -v r="$speed" 'BEGIN { print (r >= 1.8 ? "met" : "MISSED") }')" "$same"
[[ $same == yes ]]
