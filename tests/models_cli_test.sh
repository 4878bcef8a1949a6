#!/usr/bin/env bash
# Model families end to end (docs/models.md): a Llama-family model (rotary
# positions, RMSNorm, SwiGLU, grouped-query attention) trains through a
# pipeline with the same losses as one process; its checkpoint exports as a
# Hugging Face directory that `train --model` starts from, giving the same
# losses at pp = 1 and pp = 2; the byte-level GPT exports as GPT-2; a tied
# head across stages trains like one process and round-trips through
# export; a second model description and a missing config.json are refused
# with a message that says what to do; inference of the Llama
# model gives the same tokens in every pool mode and from the exported
# directory. Registered with ctest.
# Usage: tests/models_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: models_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/tests/cli_test_lib.sh"

if ! "$PW" --help | grep -q '^  export'; then
  echo "model checks skipped: this pipewright has no export command"
  exit 0
fi
expect_rc() {  # expect_rc NAME RC WORDS: the run exited RC and printed WORDS
  [ "$rc" -eq "$2" ] || { fail "$1 exited $rc, expected $2"; tail -5 "$tmp/$1.log"; return; }
  [ -z "$3" ] || grep -qF -- "$3" "$tmp/$1.log" || { fail "$1: output lacks '$3'"; tail -5 "$tmp/$1.log"; }
}
losses() { jq -r '.loss' "$1" 2>/dev/null | tr '\n' ' '; }

head -c 6000 /usr/share/common-licenses/GPL-3 >"$tmp/text.txt"
llama=(--config "$root/examples/tiny.toml" --set model.position=rope --set model.norm=rmsnorm
       --set model.mlp=swiglu --set model.d_ff=96 --set model.n_kv_heads=2 --set model.bias=false)
common=(--steps 4 --eval-batches 0 --data "$tmp/text.txt" --microbatches 4)

# A Llama-family model: pp = 2 (zb-h1, split backward) trains like pp = 1.
run llama1 train "${llama[@]}" "${common[@]}" --pp 1 --metrics-out "$tmp/llama1.jsonl"
expect_rc llama1 0 "summary: 4 steps"
run llama2 train "${llama[@]}" "${common[@]}" --pp 2 --schedule zb-h1 --metrics-out "$tmp/llama2.jsonl" \
  --checkpoint-dir "$tmp/ck_llama"
expect_rc llama2 0 "summary: 4 steps"
l1=$(losses "$tmp/llama1.jsonl") l2=$(losses "$tmp/llama2.jsonl")
[ -n "$l1" ] && [ "$l1" = "$l2" ] || fail "llama losses differ: pp=1 '$l1', pp=2 zb-h1 '$l2'"

# Export as Hugging Face, then start from it: pp = 1 and pp = 2 (1f1b) agree.
run export export --checkpoint "$tmp/ck_llama" --out "$tmp/hf_llama"
expect_rc export 0 "a Hugging Face llama model"
[ "$(jq -r '.model_type' "$tmp/hf_llama/config.json")" = llama ] || fail "export: config.json is not llama"
[ "$(jq -r '.num_key_value_heads' "$tmp/hf_llama/config.json")" = 2 ] || fail "export: num_key_value_heads is not 2"
from=(--model "$tmp/hf_llama" --set model.seq_len=64 "${common[@]}")
run from1 train "${from[@]}" --pp 1 --metrics-out "$tmp/from1.jsonl"
expect_rc from1 0 "summary: 4 steps"
run from2 train "${from[@]}" --pp 2 --metrics-out "$tmp/from2.jsonl"
expect_rc from2 0 "summary: 4 steps"
f1=$(losses "$tmp/from1.jsonl") f2=$(losses "$tmp/from2.jsonl")
[ -n "$f1" ] && [ "$f1" = "$f2" ] || fail "from --model: pp=1 '$f1' and pp=2 '$f2' differ"
# Starting from the trained weights, the first loss is below the random init's.
first() { echo "$1" | awk '{print $1}'; }
awk -v a="$(first "$f1")" -v b="$(first "$l1")" 'BEGIN { exit !(a < b) }' ||
  fail "train --model did not start from the trained weights (first loss $(first "$f1") vs init $(first "$l1"))"

# The byte-level GPT is GPT-2 with the exact GELU and its own head.
run gpt train --config "$root/examples/tiny.toml" "${common[@]}" --pp 2 --checkpoint-dir "$tmp/ck_gpt"
expect_rc gpt 0 ""
run export_gpt export --checkpoint "$tmp/ck_gpt" --out "$tmp/hf_gpt" --dtype BF16
expect_rc export_gpt 0 "a Hugging Face gpt2 model"
[ "$(jq -r '.activation_function' "$tmp/hf_gpt/config.json")" = gelu ] || fail "export: GPT-2 activation is not gelu"
[ "$(jq -r '.torch_dtype' "$tmp/hf_gpt/config.json")" = bfloat16 ] ||
  fail "export --dtype BF16 wrote torch_dtype $(jq -r '.torch_dtype' "$tmp/hf_gpt/config.json")"
# A capped context of a learned-position model reads the table's first rows;
# a longer one is refused with the limit.
if "$PW" --help | grep -q '^  eval'; then
  run gpt_capped eval --model "$tmp/hf_gpt" --set model.seq_len=32 --data "$tmp/text.txt" --max-windows 4
  expect_rc gpt_capped 0 "windows of up to 32"
  long=$(( $(jq -r '.n_positions' "$tmp/hf_gpt/config.json") * 2 ))
  run gpt_longer eval --model "$tmp/hf_gpt" --set model.seq_len=$long --data "$tmp/text.txt" --max-windows 1
  expect_rc gpt_longer 1 "cannot grow: give model.seq_len <= $(jq -r '.n_positions' "$tmp/hf_gpt/config.json")"
fi
# A .bin of shard size with another tool's magic is refused naming it, not
# trained on as text.
{ printf 'GGUF'; head -c 4096 /dev/zero; } >"$tmp/foreign.bin"
run foreign train --config "$root/examples/tiny.toml" --steps 1 --eval-batches 0 --data "$tmp/foreign.bin"
expect_rc foreign 1 "its magic is 1179993927 (0x46554747)"

# Refusals.
# A tied head across stages: pp = 2 keeps the tie (the head's copy and the
# embedding sum their gradients) and trains like pp = 1; its export holds one
# embedding, and trains again at pp = 2.
close() {  # close A B: the two loss lists agree to 1e-5 relative
  awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); m = split(b, y, " "); if (n == 0 || n != m) exit 1;
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > 1e-5 * (x[i] < 0 ? -x[i] : x[i])) exit 1 } }'
}
run tied1 train "${llama[@]}" "${common[@]}" --pp 1 --set model.tie_embeddings=true --metrics-out "$tmp/tied1.jsonl"
expect_rc tied1 0 "summary: 4 steps"
run tied2 train "${llama[@]}" "${common[@]}" --pp 2 --set model.tie_embeddings=true --metrics-out "$tmp/tied2.jsonl" \
  --checkpoint-dir "$tmp/ck_tied"
expect_rc tied2 0 "summary: 4 steps"
t1=$(losses "$tmp/tied1.jsonl") t2=$(losses "$tmp/tied2.jsonl")
close "$t1" "$t2" || fail "tied: pp=1 '$t1' and pp=2 '$t2' losses differ"
run export_tied export --checkpoint "$tmp/ck_tied" --out "$tmp/hf_tied"
expect_rc export_tied 0 "a Hugging Face llama model"
[ "$(jq -r '.tie_word_embeddings' "$tmp/hf_tied/config.json")" = true ] || fail "export: tie_word_embeddings is not true"
# The source's facts (as a downloaded model has them): BOS/EOS and a
# generation config. A run with a shorter training window keeps them, and
# the model's context, through its checkpoint into its export.
jq '.bos_token_id = 1 | .eos_token_id = 2' "$tmp/hf_tied/config.json" >"$tmp/c.json" && mv "$tmp/c.json" "$tmp/hf_tied/config.json"
echo '{"bos_token_id": 1, "eos_token_id": [2, 3], "do_sample": false}' >"$tmp/hf_tied/generation_config.json"
context=$(jq -r '.max_position_embeddings' "$tmp/hf_tied/config.json")
run from_tied train --model "$tmp/hf_tied" --set model.seq_len=32 "${common[@]}" --pp 2 --metrics-out "$tmp/ft.jsonl" \
  --checkpoint-dir "$tmp/ck_ft"
expect_rc from_tied 0 "summary: 4 steps"
run export_ft export --checkpoint "$tmp/ck_ft" --out "$tmp/hf_ft"
expect_rc export_ft 0 ""
[ "$(jq -r '.max_position_embeddings' "$tmp/hf_ft/config.json")" = "$context" ] ||
  fail "export after --set model.seq_len=32 wrote max_position_embeddings $(jq -r '.max_position_embeddings' "$tmp/hf_ft/config.json"), the source said $context"
[ "$(jq -c '[.bos_token_id, .eos_token_id]' "$tmp/hf_ft/config.json")" = "[1,2]" ] || fail "export dropped bos/eos ids"
[ "$(jq -c '.eos_token_id' "$tmp/hf_ft/generation_config.json" 2>/dev/null)" = "[2,3]" ] ||
  fail "export wrote no generation_config.json of the source"
run both train --model "$tmp/hf_llama" --config "$root/examples/tiny.toml" "${common[@]}"
expect_rc both 1 "give one"
run noconfig train --model "$tmp" "${common[@]}"
expect_rc noconfig 1 "has no config.json"
run badchoice train "${llama[@]}" "${common[@]}" --set model.mlp=swiglu2
expect_rc badchoice 1 "did you mean 'swiglu'"
# Inference of a Llama-family model (rope, GQA cache, RMSNorm, SwiGLU): every
# pool mode on two ranks gives one process's tokens, and the exported
# Hugging Face directory (--model) gives the checkpoint's.
if "$PW" --help | grep -q '^  infer'; then
  {
    echo '{"id": "a", "prompt": "The quick brown fox"}'
    echo '{"id": "b", "prompt": "GNU GENERAL PUBLIC LICENSE, Version 3"}'
    echo '{"id": "c", "prompt": "x", "max_tokens": 3}'
    echo '{"id": "d", "prompt": "Everyone is permitted to copy and distribute verbatim copies"}'
  } >"$tmp/prompts.jsonl"
  outputs() { sed -E 's/.*"id":"([^"]*)".*"tokens":(\[[0-9,]*\])\}$/\1 \2/' "$1" | sort; }
  infer() {  # infer NAME ARGS...
    local name=$1
    shift
    run "$name" infer --prompts "$tmp/prompts.jsonl" --out "$tmp/$name.jsonl" --max-tokens 12 --memory-budget 64MiB "$@"
    expect_rc "$name" 0 ""
    outputs "$tmp/$name.jsonl" >"$tmp/$name.out"
  }
  infer one --checkpoint "$tmp/ck_llama" --ranks 1
  [ "$(wc -l <"$tmp/one.out")" -eq 4 ] || fail "infer of the llama checkpoint did not answer every prompt"
  for mode in replicate was cas shared; do
    infer "$mode" --checkpoint "$tmp/ck_llama" --ranks 2 --mode "$mode"
    cmp -s "$tmp/one.out" "$tmp/$mode.out" || { fail "llama infer --mode $mode differs from one process"; diff "$tmp/one.out" "$tmp/$mode.out" | head -4; }
  done
  infer hf --model "$tmp/hf_llama" --set model.seq_len=64 --ranks 1
  cmp -s "$tmp/one.out" "$tmp/hf.out" || fail "infer --model (the export) differs from infer --checkpoint"
  run eval eval --model "$tmp/hf_llama" --set model.seq_len=64 --data "$tmp/text.txt" --max-windows 4
  expect_rc eval 0 "perplexity"
  # A model of 512 tokens without tokenizer files serves prompts given as
  # ids (the results carry ids, no text), stops at config.json's EOS, and
  # asks for a tokenizer or ids when a prompt is text.
  run export_ids export "${llama[@]}" --set model.vocab_size=512 --out "$tmp/hf_ids"
  expect_rc export_ids 0 ""
  jq '.eos_token_id = 7' "$tmp/hf_ids/config.json" >"$tmp/c.json" && mv "$tmp/c.json" "$tmp/hf_ids/config.json"
  printf '%s\n' '{"id": "a", "prompt_ids": [300, 12, 500, 7]}' '{"id": "b", "prompt_ids": [1, 2, 3]}' >"$tmp/ids.jsonl"
  run ids infer --model "$tmp/hf_ids" --prompts "$tmp/ids.jsonl" --out "$tmp/ids_out.jsonl" --max-tokens 6 --ranks 2
  expect_rc ids 0 ""
  [ "$(jq -s 'length' "$tmp/ids_out.jsonl")" = 2 ] || fail "ids-only serving did not answer both prompts"
  jq -e -s 'all(.[]; (.tokens | length) >= 1 and (.tokens | all(. >= 0 and . < 512)) and .text == "")' \
    "$tmp/ids_out.jsonl" >/dev/null || fail "ids-only results are not ids without text: $(head -c 300 "$tmp/ids_out.jsonl")"
  # A checkpoint trained from a Hugging Face directory with a tokenizer
  # carries it: infer and eval of the checkpoint need no --tokenizer.
  if [ -f "$root/examples/tokenizers/gpt2/vocab.json" ]; then
    run export_g2 export --config "$root/examples/models/gpt2-tiny.toml" --out "$tmp/hf_g2"
    expect_rc export_g2 0 ""
    cp "$root/examples/tokenizers/gpt2/vocab.json" "$root/examples/tokenizers/gpt2/merges.txt" "$tmp/hf_g2/"
    run shards tokenize --model "$tmp/hf_g2" --out "$tmp/g2_shards" "$tmp/text.txt"
    expect_rc shards 0 ""
    run train_g2 train --model "$tmp/hf_g2" --data "$tmp/g2_shards" --steps 2 --eval-batches 0 --microbatches 2 \
      --checkpoint-dir "$tmp/ck_g2"
    expect_rc train_g2 0 "summary: 2 steps"
    [ -f "$tmp/ck_g2/source/vocab.json" ] && [ -f "$tmp/ck_g2/source/merges.txt" ] ||
      fail "the checkpoint of train --model does not carry its tokenizer"
    run g2_infer infer --checkpoint "$tmp/ck_g2" --prompts "$tmp/prompts.jsonl" --out "$tmp/g2.jsonl" --max-tokens 4
    expect_rc g2_infer 0 ""
    jq -e -s 'length == 4 and all(.[]; (.text | type) == "string" and (.tokens | length) >= 1)' "$tmp/g2.jsonl" \
      >/dev/null || fail "infer of the carried-tokenizer checkpoint gave no text results"
    run g2_eval eval --checkpoint "$tmp/ck_g2" --data "$tmp/text.txt" --max-windows 2
    expect_rc g2_eval 0 "perplexity"
  fi
  # A Mistral-shaped model (config.json model_type "mistral", a sliding
  # window narrower than its context) served with Mistral 7B's
  # SentencePiece-style tokenizer.json: prompts become the ids the reference
  # encoders gave (tests/tokenizer_refs/), the context is capped at the
  # window (the last token generated is the 33rd), and two ranks give one
  # process's tokens.
  if [ -f "$root/examples/tokenizers/mistral/tokenizer.json" ]; then
    run export_mistral export --config "$root/examples/models/mistral-tiny.toml" --out "$tmp/hf_mistral"
    expect_rc export_mistral 0 ""
    jq '.model_type = "mistral" | .sliding_window = 32 | .bos_token_id = 1 | .eos_token_id = 2' \
      "$tmp/hf_mistral/config.json" >"$tmp/c.json" && mv "$tmp/c.json" "$tmp/hf_mistral/config.json"
    cp "$root/examples/tokenizers/mistral/tokenizer.json" "$root/examples/tokenizers/mistral/tokenizer_config.json" \
      "$tmp/hf_mistral/"
    refs="$root/tests/tokenizer_refs/reference_ids.json"
    : >"$tmp/mistral_prompts.jsonl"
    for i in 0 2 4 5 7 8; do
      text=$(jq -r ".texts[$i]" "$refs")
      want=$(jq -c ".tokenizers.mistral7b_lenml_llama2_pkg.encode_with_special[$i]" "$refs")
      got=$("$PW" tokenize --model "$tmp/hf_mistral" --text "$text" --json | jq -c '.ids')
      [ "$got" = "$want" ] || fail "mistral tokenize of text $i: $got, the reference encoders gave $want"
      jq -cn --arg id "t$i" --arg p "$text" --argjson n "$(echo "$want" | jq length)" \
        '{id: $id, prompt: $p, want_prompt_tokens: $n}' >>"$tmp/mistral_prompts.jsonl"
    done
    run mistral1 infer --model "$tmp/hf_mistral" --prompts "$tmp/mistral_prompts.jsonl" --out "$tmp/mistral1.jsonl" \
      --max-tokens 6 --ranks 1
    expect_rc mistral1 0 ""
    jq -e -s --slurpfile p "$tmp/mistral_prompts.jsonl" \
      'length == 6 and all(.[]; . as $r | ($p[] | select(.id == $r.id) | .want_prompt_tokens) == $r.prompt_tokens
                                and (.text | type) == "string"
                                and (.tokens | length) == ([6, 33 - .prompt_tokens] | min))' "$tmp/mistral1.jsonl" \
      >/dev/null || fail "mistral infer: prompt lengths or results wrong: $(head -c 400 "$tmp/mistral1.jsonl")"
    run mistral2 infer --model "$tmp/hf_mistral" --prompts "$tmp/mistral_prompts.jsonl" --out "$tmp/mistral2.jsonl" \
      --max-tokens 6 --ranks 2 --mode was
    expect_rc mistral2 0 ""
    [ "$(outputs "$tmp/mistral1.jsonl")" = "$(outputs "$tmp/mistral2.jsonl")" ] ||
      fail "mistral infer on 2 ranks (was) differs from one process"
    run mistral_eval eval --model "$tmp/hf_mistral" --data "$tmp/text.txt" --max-windows 2
    expect_rc mistral_eval 0 "windows of up to 32"
  fi
  printf '%s\n' '{"id": "t", "prompt": "some text"}' >"$tmp/text_prompt.jsonl"
  run ids_text infer --model "$tmp/hf_ids" --prompts "$tmp/text_prompt.jsonl" --out "$tmp/ids_text.jsonl"
  expect_rc ids_text 1 "every prompt as \"prompt_ids\""
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures model check(s) failed"
  exit 1
fi
echo "all model checks passed"
