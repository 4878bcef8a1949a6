#!/usr/bin/env bash
# The newcomer's test command: installs dependencies, builds, and runs every
# test (ctest). Exits non-zero when any step or test fails.
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# One intra-op thread per process; OpenBLAS keeps its own pool (see DESIGN.md).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# What machine this log comes from: results that depend on kernels (batch
# invariance, bit-equal comparisons) are only meaningful with these facts.
echo "test: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
for var in OPENBLAS_CORETYPE ATEN_CPU_CAPABILITY ONEDNN_MAX_CPU_ISA PIPEWRIGHT_KERNELS; do
  echo "test: $var=${!var:-(unset)}"
done
build/src/cli/pipewright kernels | sed 's/^/test: /'
ctest --test-dir build --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
