#!/usr/bin/env bash
# Models of real size, served the way a new user would: Hugging Face
# directories in bf16 of Qwen2.5-0.5B's and Llama-3.2-1B's published shapes
# with random weights (`pipewright export --dtype BF16` of
# examples/models/*-shape.toml), then `pipewright infer --model DIR` on the
# defaults (no memory flag), one thread per rank, and one table: for each
# weights format, tok/s at 1, 8 and 32 sequences (whole run and decode-only
# passes), the largest process's peak RSS (GNU time), the load time, and 2
# ranks against 1 at 32 sequences in replicate and in shared.
#
# Formats (FORMATS): "bf16" (the default for these bf16 directories:
# --weights auto), "int8" (--weights int8), "fp32" (fp32 weights in
# pipewright's panels) and "plain" (fp32, OpenBLAS, --batch-invariant off).
# Prompts: N lines of 16 token ids. The directories get Llama 3's tokenizer
# (examples/tokenizers/llama3: Llama-3.2's own; for the Qwen shape only a
# stand-in whose ids fit its vocabulary).
#
# Usage: bench/realsize_bench.sh [path/to/pipewright]
# Env: SHAPES ("qwen2.5-0.5b llama-3.2-1b"), FORMATS ("bf16 int8 fp32 plain"),
#      SEQS ("1 8 32"), MAX_TOKENS (16), WORK (a temporary directory; the
#      exported directories are kept there between runs when WORK is given).
# Needs: bash, jq, GNU time (/usr/bin/time), about 3 GB of disk and 12 GiB of memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
SHAPES=${SHAPES:-qwen2.5-0.5b llama-3.2-1b}
FORMATS=${FORMATS:-bf16 int8 fp32 plain}
SEQS=${SEQS:-1 8 32}
MAX_TOKENS=${MAX_TOKENS:-16}
command -v jq >/dev/null || { echo "realsize_bench: needs jq"; exit 1; }
[ -x /usr/bin/time ] || { echo "realsize_bench: needs GNU time (Debian's package time)"; exit 1; }
if [ -n "${WORK:-}" ]; then
  tmp=$WORK
  mkdir -p "$tmp"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

flags_of() {  # flags_of FORMAT
  case $1 in
    bf16) echo "" ;;  # the defaults: --weights auto keeps the directory's bf16
    int8) echo "--weights int8" ;;
    fp32) echo "--weights fp32" ;;
    plain) echo "--weights fp32 --weights-layout plain --batch-invariant off" ;;
    *) echo "realsize_bench: unknown format $1 (bf16, int8, fp32, plain)" >&2; exit 2 ;;
  esac
}

python_free_ids() {  # python_free_ids N VOCAB: N lines of 16 ids below VOCAB
  awk -v n="$1" -v v="$2" 'BEGIN { for (i = 0; i < n; i++) { s = "";
    for (j = 0; j < 16; j++) s = s (j ? "," : "") ((i * 7919 + j * 104729) % v);
    printf "{\"id\": \"%d\", \"prompt_ids\": [%s]}\n", i, s } }'
}

for shape in $SHAPES; do
  toml=$root/examples/models/$shape-shape.toml
  [ -f "$toml" ] || { echo "realsize_bench: no $toml"; exit 1; }
  dir=$tmp/$shape-bf16
  if [ ! -f "$dir/config.json" ]; then
    echo "realsize_bench: writing $dir (random weights, bf16)..."
    "$PW" export --config "$toml" --out "$dir" --dtype BF16 >/dev/null
    cp "$root"/examples/tokenizers/llama3/* "$dir"/
  fi
  vocab=$(jq .vocab_size "$dir/config.json")
  echo
  echo "realsize_bench: $shape ($(jq -r '"d \(.hidden_size), \(.num_hidden_layers) layers, vocab \(.vocab_size)"' "$dir/config.json"), $(du -sh "$dir" | cut -f1) on disk)," \
       "$MAX_TOKENS tokens per prompt, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  printf '%-8s %5s %6s %10s %12s %12s %9s %8s\n' format ranks seqs mode "tok/s" "decode tok/s" "peak RSS" "load s"
  for format in $FORMATS; do
    for run in $(for s in $SEQS; do echo "1:$s:replicate"; done) 2:32:replicate 2:32:shared; do
      IFS=: read -r ranks seqs mode <<<"$run"
      python_free_ids "$seqs" "$vocab" >"$tmp/p$seqs.jsonl"
      name=$shape-$format-$ranks-$seqs-$mode
      rm -f "$tmp/$name.jsonl"
      # shellcheck disable=SC2046
      if ! /usr/bin/time -f '%M' -o "$tmp/$name.rss" "$PW" infer --model "$dir" --prompts "$tmp/p$seqs.jsonl" \
           --out "$tmp/$name.jsonl" --ranks "$ranks" --mode "$mode" --max-tokens "$MAX_TOKENS" \
           --max-sequences "$seqs" --ignore-eos $(flags_of "$format") --summary-json "$tmp/$name.json" \
           >"$tmp/$name.log" 2>&1; then
        echo "realsize_bench: $name failed:"; tail -5 "$tmp/$name.log"; exit 1
      fi
      jq -r --arg f "$format" --arg r "$ranks" --arg s "$seqs" --arg m "$mode" --arg rss "$(tail -1 "$tmp/$name.rss")" \
        '[$f, $r, $s, $m, .tokens_per_s, .decode_tokens_per_s, (($rss | tonumber) / 1048576),
          ([.rank_summaries[].load_seconds] | max)] | @tsv' "$tmp/$name.json" |
        awk -F'\t' '{ printf "%-8s %5d %6d %10s %12.1f %12.1f %5.2f GiB %8.1f\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
    done
  done
done
