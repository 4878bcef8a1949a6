#!/usr/bin/env bash
# Structured output, side by side: the example prompts (128) on the
# byte-level yardstick (examples/small.toml, context 256; random init, so
# the model has no idea of JSON and the constraint does all the work), one
# rank, sampled (temperature 0.8), MAX_TOKENS (160) each, run
# unconstrained and with every prompt held to a JSON Schema (nesting, an
# enum, an integer range, an array of pattern strings; --json-schema),
# alternately, REPEATS times (3). Per run: tok/s (generated tokens /
# generation time), tokens per output (a JSON answer ends sooner than
# free text runs to MAX_TOKENS, so its passes are smaller: tok/s compares
# unlike batches) and, for the constrained runs, the share of outputs that
# ended as a whole match and parse and validate (checked with jq).
# With BASE=path/to/an/older/pipewright the unconstrained run is repeated
# with it in the same rounds: unconstrained speed before and after.
#
# Usage: bench/structured_output_bench.sh [path/to/pipewright]   (quiet machine: no build, no tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
MAX_TOKENS=${MAX_TOKENS:-160}
REPEATS=${REPEATS:-3}
BASE=${BASE:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root/examples/prompts.jsonl" "$tmp/prompts.jsonl"
cat >"$tmp/schema.json" <<'EOF'
{"type": "object", "properties": {
  "title": {"type": "string", "maxLength": 16},
  "licence": {"enum": ["MIT", "Apache-2.0", "GPL-3.0", "BSD-3-Clause"]},
  "year": {"type": "integer", "minimum": 1980, "maximum": 2030},
  "meta": {"type": "object", "properties": {"ok": {"type": "boolean"}, "score": {"type": "number"}}, "required": ["ok"]},
  "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,6}$"}, "maxItems": 3}},
 "required": ["title", "licence", "year", "meta"]}
EOF
valid='(.title | type == "string" and length <= 16) and
       ([.licence] | inside(["MIT", "Apache-2.0", "GPL-3.0", "BSD-3-Clause"])) and
       (.year | . >= 1980 and . <= 2030 and floor == .) and (.meta.ok | type == "boolean") and
       ((.meta.score // 0) | type == "number") and ((.tags // []) | length <= 3 and all(test("^[a-z]{2,6}$"))) and
       (keys_unsorted - ["title", "licence", "year", "meta", "tags"] == [])'
run() {  # run NAME BINARY ARGS...: tok/s
  local name=$1 bin=$2
  shift 2
  rm -f "$tmp/$name.jsonl"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bin" infer --config "$root/examples/small.toml" --set model.seq_len=256 \
    --prompts "$tmp/prompts.jsonl" --out "$tmp/$name.jsonl" --ranks 1 --mode replicate --memory-budget 256MiB \
    --max-tokens "$MAX_TOKENS" --temperature 0.8 --summary-json "$tmp/$name.json" "$@" >"$tmp/$name.log" 2>&1 ||
    { echo "structured_output_bench: $name failed:"; tail -5 "$tmp/$name.log"; exit 1; }
  jq -r '"\(.tokens_per_s) \(.generated_tokens / .requests)"' "$tmp/$name.json"
}
checked() {  # checked FILE: "valid total"
  local total ok=0 t
  total=$(wc -l <"$1")
  while IFS= read -r t; do
    jq -e "$valid" <<<"$t" >/dev/null 2>&1 && ok=$((ok + 1))
  done < <(jq -r 'select(.finish_reason == "end") | .text' "$1")
  echo "$ok $total"
}
echo "$(wc -l <"$tmp/prompts.jsonl") prompts, $MAX_TOKENS tokens at most, one rank, sampled; tok/s"
free=() held=() base=() all_valid=yes
for r in $(seq 1 "$REPEATS"); do
  read -r f flen < <(run "free$r" "$PW")
  read -r h hlen < <(run "held$r" "$PW" --json-schema "$tmp/schema.json")
  read -r ok total < <(checked "$tmp/held$r.jsonl")
  [[ $ok == "$total" ]] || all_valid=NO
  line=$(printf "repeat %d: unconstrained %7.1f (%.0f tokens/output) | json schema %7.1f (%.0f tokens/output; %.2fx), %d/%d parse and validate" \
    "$r" "$f" "$flen" "$h" "$hlen" "$(awk -v a="$h" -v b="$f" 'BEGIN { print a / b }')" "$ok" "$total")
  if [[ -n $BASE ]]; then
    read -r b _ < <(run "base$r" "$BASE")
    base+=("$b")
    line+=$(printf " | unconstrained before %7.1f" "$b")
  fi
  echo "$line"
  free+=("$f") held+=("$h")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "median: unconstrained %.1f, json schema %.1f tok/s (%.2fx); every output valid: %s\n" \
  "$(median "${free[@]}")" "$(median "${held[@]}")" \
  "$(awk -v a="$(median "${held[@]}")" -v b="$(median "${free[@]}")" 'BEGIN { print a / b }')" "$all_valid"
if [[ -n $BASE ]]; then
  printf "unconstrained now %.2fx the older binary's (medians)\n" \
    "$(awk -v a="$(median "${free[@]}")" -v b="$(median "${base[@]}")" 'BEGIN { print a / b }')"
fi
[[ $all_valid == yes ]]
