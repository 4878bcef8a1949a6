#!/usr/bin/env bash
# Tokenizing benchmark: `pipewright tokenize` on one core (taskset), for
# each tokenizer in TOKENIZERS (default "gpt2 mistral gemma": GPT-2's
# byte-level BPE tables, Mistral's and Gemma's SentencePiece-style
# tokenizer.json; examples/tokenizers/, scripts/fetch-tokenizers.sh) over a
# corpus built from what every Debian machine has: the licenses in
# /usr/share/common-licenses and the packages' changelogs, repeated to SIZE
# MB (default 64) — English prose, code-like changelog lines and names.
# Prints MB/s of text per run (REPEATS, default 3) and the median, against
# the aim of >= 10 MB/s on one core; and the bytes-per-token ratio.
#
# Usage: bench/tokenize_bench.sh [PATH/TO/pipewright]   (quiet machine: no build, no tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
SIZE=${SIZE:-64}
REPEATS=${REPEATS:-3}
TOKENIZERS=${TOKENIZERS:-gpt2 mistral gemma}
for name in $TOKENIZERS; do
  [ -d "$root/examples/tokenizers/$name" ] || "$root/scripts/fetch-tokenizers.sh"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  cat /usr/share/common-licenses/* 2>/dev/null
  zcat -f /usr/share/doc/*/changelog*.gz 2>/dev/null || true
} | iconv -f UTF-8 -t UTF-8 -c >"$work/seed.txt"
: >"$work/corpus.txt"
while [ "$(stat -c %s "$work/corpus.txt")" -lt $((SIZE * 1000000)) ]; do cat "$work/seed.txt" >>"$work/corpus.txt"; done
# Drop the last (cut) line so the sample stays valid UTF-8.
head -c $((SIZE * 1000000)) "$work/corpus.txt" | sed '$d' >"$work/c.txt"
echo "corpus: $(stat -c %s "$work/c.txt") bytes ($(wc -c <"$work/seed.txt") distinct), one core"
for name in $TOKENIZERS; do
  tables="$root/examples/tokenizers/$name"
  rates=()
  for r in $(seq 1 "$REPEATS"); do
    rm -rf "$work/out"
    OMP_NUM_THREADS=1 taskset -c 0 "$PW" tokenize "$work/c.txt" --tokenizer "$tables" --out "$work/out" --json \
      >"$work/run.json"
    rate=$(jq -r '.mb_per_s' "$work/run.json")
    tokens=$(jq -r '.tokens' "$work/run.json")
    bytes=$(jq -r '.bytes' "$work/run.json")
    printf "%s run %d: %.1f MB/s, %d tokens, %.2f bytes/token\n" "$name" "$r" "$rate" "$tokens" \
      "$(awk -v b="$bytes" -v t="$tokens" 'BEGIN { print b / t }')"
    rates+=("$rate")
  done
  median=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  verdict=$(awk -v m="$median" 'BEGIN { print (m >= 10 ? "met" : "MISSED") }')
  printf "%s median: %.1f MB/s on one core (aim >= 10 MB/s: %s)\n" "$name" "$median" "$verdict"
done
