#!/usr/bin/env bash
# Fuzzes every parser of outside input (fuzz/CMakeLists.txt lists them):
# configures a clang build in build-fuzz/ (-DPW_BUILD_FUZZ=ON; no tests,
# benchmarks or LibTorch), builds the libFuzzer targets, and runs each, one
# at a time, for SECONDS on a scratch copy of its seed corpus
# (fuzz/corpus/<parser>/; the seeds are not touched). Prints one line per
# parser: executions, seconds, crashes found (libFuzzer's crash-* files; a
# crash is a sanitizer report or a check's abort: fuzz/fuzz_check.h),
# hangs (timeout-*) and the corpus size at the end; with --json (or
# FUZZ_JSON=1) a JSON array of the same, last. Exits 1 when any run found
# a crash or hang; its inputs are kept in build-fuzz/runs/<parser>/.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [--json]     (default 60)
# Needs clang and libFuzzer (clang, libclang-rt-14-dev: scripts/install-deps.sh).
# Reproduce a find: build-fuzz/fuzz/<target> build-fuzz/runs/<parser>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
json=${FUZZ_JSON:-0}
for arg in "$@"; do
  case "$arg" in
    --json) json=1 ;;
    ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [--json]" >&2; exit 2 ;;
    *) seconds=$arg ;;
  esac
done
if ! command -v clang++ >/dev/null; then
  echo "scripts/fuzz.sh: clang++ not found; run scripts/install-deps.sh (clang, libclang-rt-14-dev)" >&2
  exit 1
fi

# parser (its fuzz/corpus/ folder), target, dictionary ("" for none)
targets=(
  "pipe pipe_parser_fuzz fuzz/pipe.dict"
  "schedule_text schedule_text_fuzz fuzz/schedule.dict"
  "schedule_csv schedule_csv_fuzz fuzz/schedule.dict"
  "toml_config toml_config_fuzz fuzz/toml.dict"
  "cost_model_json cost_model_json_fuzz fuzz/json.dict"
  "prompts_jsonl prompts_jsonl_fuzz fuzz/json.dict"
  "safetensors safetensors_fuzz fuzz/json.dict"
  "checkpoint_manifest checkpoint_manifest_fuzz fuzz/json.dict"
)

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
jobs=$(nproc 2>/dev/null || echo 2)
CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPW_BUILD_FUZZ=ON \
  -DPW_BUILD_TESTS=OFF -DPW_BUILD_BENCH=OFF -DPW_WITH_TORCH=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"$jobs" --target pw_fuzz_all >&2

runs=build-fuzz/runs
rm -rf "$runs"
found=0
rows=()
for entry in "${targets[@]}"; do
  read -r parser target dict <<<"$entry"
  dir=$runs/$parser
  mkdir -p "$dir/corpus"
  cp -r "fuzz/corpus/$parser/." "$dir/corpus/"
  args=(-fork=1 -ignore_crashes=1 -max_total_time="$seconds" -timeout=10 -print_funcs=0
        -artifact_prefix="$dir/")
  [[ -f $dict ]] && args+=(-dict="$dict")
  start=$(date +%s)
  # Fork mode runs the target in a child process per job and goes on after
  # a crash, so a run counts every crash it finds; its status says nothing.
  "build-fuzz/fuzz/$target" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1 || true
  took=$(($(date +%s) - start))
  # The parent's progress lines, "#<executions>: cov: ... corp: <n> ...".
  execs=$(grep -oE '^#[0-9]+' "$dir/log" | tail -1 | tr -d '#' || true)
  execs=${execs:-0}
  crashes=$(find "$dir" -maxdepth 1 -name 'crash-*' | wc -l)
  hangs=$(find "$dir" -maxdepth 1 -name 'timeout-*' | wc -l)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  if ((crashes + hangs > 0)); then found=1; fi
  printf '%-20s %12s executions %5ss %3s crashes %3s hangs %6s corpus files\n' \
    "$parser" "$execs" "$took" "$crashes" "$hangs" "$corpus"
  rows+=("{\"parser\": \"$parser\", \"target\": \"$target\", \"executions\": $execs, \"seconds\": $took, \"crashes\": $crashes, \"hangs\": $hangs, \"corpus\": $corpus}")
done
if ((json)); then
  printf '['
  for i in "${!rows[@]}"; do
    ((i > 0)) && printf ',\n '
    printf '%s' "${rows[$i]}"
  done
  printf ']\n'
fi
exit "$found"
