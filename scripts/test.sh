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
ctest --test-dir build --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
