#!/usr/bin/env bash
# Runs a command under the whole kernel stack of another kind of CPU, as
# far as this one can play it: pipewright's kernel level
# (PIPEWRIGHT_KERNELS), LibTorch's CPU dispatch (ATEN_CPU_CAPABILITY),
# oneDNN's ISA (ONEDNN_MAX_CPU_ISA) and the OpenBLAS core
# (OPENBLAS_CORETYPE). Results that depend on a kernel path are proved under
# each stack the CPU runs (ctest registers the invariance tests this way);
# a stack this CPU cannot run exits 77, which ctest reports as skipped.
#
#   avx2-zen       an AVX2-only EPYC (Zen 3): OpenBLAS Zen, no AVX-512 anywhere
#   avx2-haswell   the same with OpenBLAS's Haswell kernels
#   avx512-skylakex  AVX-512 with OpenBLAS's SkylakeX kernels
#   scalar         pipewright's scalar kernels, LibTorch's default dispatch
#
# Usage: tests/kernel_stack.sh STACK COMMAND [ARGS...]
set -uo pipefail
stack=${1:?usage: kernel_stack.sh STACK COMMAND...}
shift
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
case $stack in
  avx2-zen | avx2-haswell)
    has avx2 fma f16c || { echo "kernel_stack: $stack needs AVX2, FMA and F16C; skipped"; exit 77; }
    core=Haswell
    [ "$stack" = avx2-zen ] && core=Zen
    export PIPEWRIGHT_KERNELS=avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=$core ;;
  avx512-skylakex)
    has avx512f avx512bw avx512vl avx512dq || { echo "kernel_stack: $stack needs AVX-512; skipped"; exit 77; }
    export PIPEWRIGHT_KERNELS=avx512 OPENBLAS_CORETYPE=SkylakeX ;;
  scalar)
    export PIPEWRIGHT_KERNELS=scalar ATEN_CPU_CAPABILITY=default ;;
  *)
    echo "kernel_stack: unknown stack '$stack' (avx2-zen, avx2-haswell, avx512-skylakex, scalar)" >&2
    exit 2 ;;
esac
echo "kernel_stack $stack: PIPEWRIGHT_KERNELS=$PIPEWRIGHT_KERNELS ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-}"
exec "$@"
