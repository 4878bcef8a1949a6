#!/usr/bin/env bash
# Batch invariance of `pipewright infer`, end to end: the same prompts, in
# three orders of the prompt file, under two batch limits (64 rows a pass
# and 16 sequences; 5 rows and 3 sequences, so prompts are prefilled in
# chunks between other sequences' decode steps), on one rank and on two in
# every pool mode (36 runs), give
# every prompt the same tokens and the same log-probabilities, bit for bit
# (seeded sampling, temperature 0.8: a sampled token depends on every bit
# of the logits). docs/inference.md ("Batch invariance") says why.
# Registered with ctest. Usage: tests/infer_invariance_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: infer_invariance_test.sh PATH/TO/pipewright}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# 9 prompts of 1 to 51 bytes on the tiny model (random init): two share a
# start (prefix caching maps it in some batchings and not in others).
{
  echo '{"id": "a", "prompt": "The quick brown fox"}'
  echo '{"id": "b", "prompt": "Permission is hereby granted, free of charge,"}'
  echo '{"id": "c", "prompt": "x"}'
  echo '{"id": "d", "prompt": "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY"}'
  echo '{"id": "e", "prompt": "0123456789"}'
  echo '{"id": "f", "prompt": "Permission is hereby granted, to any person"}'
  echo '{"id": "g", "prompt": "GNU GENERAL PUBLIC LICENSE"}'
  echo '{"id": "h", "prompt": "zz"}'
  echo '{"id": "i", "prompt": "Redistribution and use in source and binary forms"}'
} >"$tmp/order0.jsonl"
tac "$tmp/order0.jsonl" >"$tmp/order1.jsonl"
awk 'NR % 2 == 0' "$tmp/order0.jsonl" >"$tmp/order2.jsonl"  # evens first, then odds
awk 'NR % 2 == 1' "$tmp/order0.jsonl" >>"$tmp/order2.jsonl"

common=(--memory-budget 16MiB --max-tokens 10 --temperature 0.8 --top-k 40 --sampling-seed 3 --logprobs 0
        --timeout 240)
limits=("--max-batch-tokens 64 --max-sequences 16" "--max-batch-tokens 5 --max-sequences 3")
# id, tokens and every log-probability, sorted by id: the comparable part.
outputs() { jq -c '[.id, .tokens, [.logprobs[].logprob]]' "$1" | sort; }

runs=0
for order in 0 1 2; do
  for l in 0 1; do
    for where in "1 replicate" "2 replicate" "2 was" "2 cas" "2 shared" "2 auto"; do
      read -r ranks mode <<<"$where"
      name=o$order-l$l-r$ranks-$mode
      # shellcheck disable=SC2086  # the limits are two flags each
      if ! "$PW" infer --prompts "$tmp/order$order.jsonl" --out "$tmp/$name.jsonl" "${common[@]}" ${limits[$l]} \
           --ranks "$ranks" --mode "$mode" >"$tmp/$name.log" 2>&1; then
        fail "infer $name exited $?"; tail -5 "$tmp/$name.log"; continue
      fi
      runs=$((runs + 1))
      outputs "$tmp/$name.jsonl" >"$tmp/$name.out"
      [ "$(wc -l <"$tmp/$name.out")" -eq 9 ] || fail "$name: $(wc -l <"$tmp/$name.out") results, expected 9"
      if [ ! -e "$tmp/reference.out" ]; then
        cp "$tmp/$name.out" "$tmp/reference.out"
      elif ! cmp -s "$tmp/reference.out" "$tmp/$name.out"; then
        fail "$name: outputs differ from o0-l0-r1-replicate's"
        diff "$tmp/reference.out" "$tmp/$name.out" | head -4
      fi
    done
  done
done
if [ "$failures" -ne 0 ]; then echo "$failures failure(s) in $runs runs"; exit 1; fi
echo "infer_invariance_test: $runs runs, identical tokens and log-probabilities"
