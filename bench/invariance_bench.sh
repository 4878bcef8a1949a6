#!/usr/bin/env bash
# What batch invariance costs, measured side by side: decode tok/s of one
# rank (replicate, one thread) with the guarantee (--batch-invariant on:
# weights in panels, pipewright's fixed-order kernels) against the same
# prompts without it (--batch-invariant off with each other layout: oneDNN
# prepacked where the CPU has it, OpenBLAS plain), at 1, 16 and 128
# sequences at once, for every kernel level this CPU runs. Each level runs
# under the whole stack of a CPU of that kind:
#   avx512  the machine's defaults
#   avx2    PIPEWRIGHT_KERNELS=avx2 ATEN_CPU_CAPABILITY=avx2
#           ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=$AVX2_CORE (Zen on an
#           AVX2-only EPYC; Haswell by default here): what an AVX2-only
#           machine runs
# Rounds interleave the layouts (REPEATS, default 3); the table gives the
# median decode tok/s of each and the ratio inv / best non-invariant layout
# (aim: >= 0.9 at every row), and the decode passes' GFLOP/s against the
# core's GEMM rate at that level (OpenBLAS's 512-wide GEMM, best of 3,
# measured under the same stack just before the rows).
#
# Model: examples/small.toml (the yardstick: width 256, 8 layers, vocab 256),
# random init; prompts: the first 2 x SEQS lines of examples/prompts.jsonl
# (at least 8); MAX_TOKENS (48) greedy tokens each.
# Usage: bench/invariance_bench.sh [path/to/pipewright]
# Env: SEQS ("1 16 128"), LEVELS (every level the CPU runs), REPEATS (3),
#      MAX_TOKENS (48), AVX2_CORE (Haswell), GEMM_BENCH (split_backward_torch_bench
#      beside the binary's build). Needs: bash, jq, awk.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
SEQS=${SEQS:-1 16 128}
REPEATS=${REPEATS:-3}
MAX_TOKENS=${MAX_TOKENS:-48}
AVX2_CORE=${AVX2_CORE:-Haswell}
GEMM_BENCH=${GEMM_BENCH:-$(dirname "$(dirname "$(dirname "$PW")")")/bench/split_backward_torch_bench}
command -v jq >/dev/null || { echo "invariance_bench: needs jq"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

if [ -z "${LEVELS:-}" ]; then
  LEVELS=avx2
  grep -qw avx512f /proc/cpuinfo && LEVELS="avx512 avx2"
fi

stack() {  # stack LEVEL: the environment of a CPU of that kind
  case $1 in
    avx512) echo "PIPEWRIGHT_KERNELS=avx512" ;;
    avx2) echo "PIPEWRIGHT_KERNELS=avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=$AVX2_CORE" ;;
    *) echo "invariance_bench: unknown level $1" >&2; exit 2 ;;
  esac
}

gemm_rate() {  # gemm_rate LEVEL: GFLOP/s of OpenBLAS's GEMM under the level's stack
  [ -x "$GEMM_BENCH" ] || { echo 0; return; }
  # shellcheck disable=SC2046
  env $(stack "$1") taskset -c 0 "$GEMM_BENCH" --benchmark_filter='BM_Gemm/small' --benchmark_repetitions=3 \
    --benchmark_format=csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /GFLOP/) c = i; next }
             c && $1 !~ /_(mean|median|stddev|cv)"/ && $c > m { m = $c } END { printf "%.1f\n", m + 0 }'
}

echo "invariance_bench: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); one rank, replicate," \
     "examples/small.toml, $MAX_TOKENS tokens per prompt, median of $REPEATS rounds"
printf '%-7s %5s %-30s %12s %10s %8s %9s %s\n' level seqs layout "decode tok/s" GFLOP/s GEMM "% GEMM" "inv / best off"
for level in $LEVELS; do
  gemm=$(gemm_rate "$level")
  layouts="panels:on plain:off"
  if [ "$level" = avx512 ]; then layouts="panels:on prepacked:off plain:off"; fi
  for s in $SEQS; do
    n=$((s < 8 ? 8 : 2 * s))
    head -n "$n" "$root/examples/prompts.jsonl" >"$tmp/p$s.jsonl"
    for round in $(seq 1 "$REPEATS"); do
      for pair in $layouts; do
        layout=${pair%:*} inv=${pair#*:}
        name=$level-$s-$layout-r$round
        # shellcheck disable=SC2046
        if ! env $(stack "$level") "$PW" infer --config "$root/examples/small.toml" --prompts "$tmp/p$s.jsonl" \
             --out "$tmp/$name.jsonl" --ranks 1 --mode replicate --memory-budget 256MiB --max-sequences "$s" \
             --max-tokens "$MAX_TOKENS" --weights-layout "$layout" --batch-invariant "$inv" \
             --summary-json "$tmp/$name.json" >"$tmp/$name.log" 2>&1; then
          echo "invariance_bench: run $name failed:"; tail -5 "$tmp/$name.log"; exit 1
        fi
      done
    done
    best_off=0 inv_tps=0
    for pair in $layouts; do
      layout=${pair%:*} inv=${pair#*:}
      files=()
      for round in $(seq 1 "$REPEATS"); do files+=("$tmp/$level-$s-$layout-r$round.json"); done
      read -r tps flops ran kernels < <(jq -s -r '[([.[].decode_tokens_per_s] | sort | .[(length - 1) / 2 | floor]),
          ([.[].decode_flops_per_s] | sort | .[(length - 1) / 2 | floor]) / 1e9, .[0].weights_layout,
          .[0].kernel_level] | @tsv' "${files[@]}")
      if [ "$inv" = on ]; then inv_tps=$tps; else best_off=$(awk -v a="$best_off" -v b="$tps" 'BEGIN { print (b > a) ? b : a }'); fi
      share=$(awk -v f="$flops" -v g="$gemm" 'BEGIN { if (g > 0) printf "%.0f %%", 100 * f / g; else printf "-" }')
      printf '%-7s %5d %-30s %12.0f %10.1f %8s %9s\n' "$level" "$s" "$ran ($kernels, inv $inv)" "$tps" "$flops" "$gemm" "$share"
    done
    awk -v a="$inv_tps" -v b="$best_off" -v l="$level" -v s="$s" \
      'BEGIN { printf "%-7s %5d %-30s %12s %10s %8s %9s %.2fx\n", l, s, "ratio", "", "", "", "", (b > 0 ? a / b : 0) }'
  done
done
