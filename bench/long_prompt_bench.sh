#!/usr/bin/env bash
# One long prompt among short ones: does chunked prefill keep the short
# ones moving? The yardstick shape (examples/small.toml, context 2,048,
# random init), one rank, replicate: SHORT (32) example prompts, MAX_TOKENS
# (64) each, alone and then beside one prompt of LONG (1,900) bytes of
# Debian's GPL-3 text, at --max-batch-tokens 64, 256 (the default) and
# 2,048 (the whole long prompt in one pass), REPEATS (2) rounds. Per run:
# the short prompts' seconds from admission to finish (the results'
# "seconds"), median and largest, and the long prompt's.
#
# Usage: bench/long_prompt_bench.sh [path/to/pipewright]   (quiet machine: no build, no tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
SHORT=${SHORT:-32}
LONG=${LONG:-1900}
MAX_TOKENS=${MAX_TOKENS:-64}
REPEATS=${REPEATS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n "$SHORT" "$root/examples/prompts.jsonl" >"$tmp/short.jsonl"
head -c "$LONG" /usr/share/common-licenses/GPL-3 | jq -Rs '{id: "long", prompt: .}' -c >"$tmp/long.jsonl"
cat "$tmp/long.jsonl" "$tmp/short.jsonl" >"$tmp/mixed.jsonl"
run() {  # run FILE ROWS: "short-median short-max long"
  rm -f "$tmp/out.jsonl"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$PW" infer --config "$root/examples/small.toml" --set model.seq_len=2048 \
    --prompts "$tmp/$1.jsonl" --out "$tmp/out.jsonl" --max-tokens "$MAX_TOKENS" --max-batch-tokens "$2" \
    --memory-budget 1GiB >"$tmp/log" 2>&1 || { echo "long_prompt_bench: $1 at $2 rows failed:"; tail -3 "$tmp/log"; exit 1; }
  jq -r 'select(.id != "long") | .seconds' "$tmp/out.jsonl" | sort -g |
    awk -v long="$(jq -r 'select(.id == "long") | .seconds' "$tmp/out.jsonl")" \
      '{ a[NR] = $1 } END { printf "%.2f %.2f %s\n", a[int((NR + 1) / 2)], a[NR], (long == "" ? "-" : sprintf("%.2f", long)) }'
}
echo "$SHORT short prompts ($MAX_TOKENS tokens each), alone and beside one of $LONG bytes; seconds from admission to finish"
for r in $(seq 1 "$REPEATS"); do
  for cfg in "short 256" "mixed 64" "mixed 256" "mixed 2048"; do
    read -r file rows <<<"$cfg"
    read -r med max long < <(run "$file" "$rows")
    printf "round %d: %-5s --max-batch-tokens %4d: short median %5.2f s, largest %5.2f s; long %s s\n" \
      "$r" "$file" "$rows" "$med" "$max" "$long"
  done
done
