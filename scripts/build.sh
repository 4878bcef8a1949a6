#!/usr/bin/env bash
# Configures and builds pipewright into build/ (Release-with-debug-info),
# printing CMake's progress lines ("[ 42%] Building ...").
# Usage: scripts/build.sh [TARGET...]     (default: everything, tests included)
#   e.g. scripts/build.sh pipewright      (only the binary: what the demo runs)
# Extra CMake configure arguments can be passed in PW_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
# ccache, when installed, makes rebuilds after a checkout switch cheap.
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" ${PW_CMAKE_ARGS:-} >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$jobs" "${targets[@]}"
