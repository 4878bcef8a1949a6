#!/usr/bin/env bash
# What the split backward costs inside training: the yardstick
# (examples/small.toml, pp=2, 8 microbatches of 8, random bytes) trained
# with `1f1b` (fused B) and `zb-h1` (I and W), side by side, REPEATS
# interleaved rounds, optionally for two binaries (BASE: a build from
# before a change) so that a fix is measured against what it replaced in
# the same run. Per run it prints:
#
#   tok/s         over the steps from the third on (total tokens / time)
#   back ms       the run's profile (--profile-out): the summed per-layer
#                 mean B (1f1b) or I + W (zb-h1), ms per microbatch
#   I+W/B         zb-h1's back ms over 1f1b's of the same binary and round
#                 (the zero-bubble papers assume 1.00)
#   zb/1f1b       zb-h1's tok/s over 1f1b's
#   bound         what zb-h1 could gain over 1f1b with a free split: the
#                 simulator's 1f1b step on 1f1b's profile over its zb-h1
#                 step on zb-h1's profile with each stage's I and W scaled
#                 to sum to 1f1b's B (the I:W split kept), both lowered as
#                 train runs them (schedule sim --as-trained)
#   minor faults  page faults of the whole job (launcher and ranks: GNU
#                 time's %R), which is where the tax went before training
#                 ranks kept freed memory (os/memory.h)
#
# Usage: bench/split_tax_bench.sh [path/to/pipewright]
# Env:   REPEATS (3), STEPS (12), BASE (a second pipewright binary to compare),
#        KEEP_TMP=1 keeps the work dir.
# Needs: bash, GNU time (/usr/bin/time), jq, awk, coreutils. Quiet machine.
set -euo pipefail

die() { echo "split_tax_bench: error: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
new=${1:-$root/build/src/cli/pipewright}
REPEATS=${REPEATS:-3}
STEPS=${STEPS:-12}
(( REPEATS >= 1 )) || die "REPEATS must be at least 1"
(( STEPS >= 4 )) || die "STEPS must be at least 4 (the first two are left out)"
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is missing: scripts/install-deps.sh installs it"
command -v jq > /dev/null || die "jq is missing: scripts/install-deps.sh installs it"

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/split_tax_bench.XXXXXX")
if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "work dir: $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi
head -c 4000000 /dev/urandom > "$tmp/random.bin"

# copy NAME BINARY: a private copy of the front end and its runtime (the
# build tree may be relinked while this runs).
copy() {
  local name=$1 pw=$2
  [[ -x $pw ]] || die "pipewright binary not found or not executable: $pw"
  [[ -x $(dirname "$pw")/pipewright-runtime ]] || die "no pipewright-runtime beside $pw"
  mkdir -p "$tmp/$name"
  cp "$pw" "$(dirname "$pw")/pipewright-runtime" "$tmp/$name/"
}
binaries=(new)
copy new "$new"
if [[ -n ${BASE:-} ]]; then
  copy base "$BASE"
  binaries=(base new)
fi

# makespan SCHEDULE COST_FILE: the simulated step, as trained.
makespan() {
  "$tmp/new/pipewright" schedule sim -s "$1" -p 2 -m 8 --cost-file "$2" --as-trained --json | jq '.makespan'
}

printf '%-5s %-5s %-6s %8s %9s %7s %8s %6s %13s\n' round build run "tok/s" "back ms" "I+W/B" "zb/1f1b" bound \
  "minor faults"
for ((rep = 1; rep <= REPEATS; ++rep)); do
  for b in "${binaries[@]}"; do
    declare -A tok=() back=()
    for s in 1f1b zb-h1; do
      out=$tmp/$b.$s.$rep
      if ! /usr/bin/time -o "$out.time" -f '%R' "$tmp/$b/pipewright" train --config "$root/examples/small.toml" \
          --pp 2 --schedule "$s" --microbatches 8 --microbatch-size 8 --steps "$STEPS" --seed 1234 \
          --data "$tmp/random.bin" --eval-batches 0 --timeout 1200 --metrics-out "$out.jsonl" \
          --profile-out "$out.profile.json" > "$out.log" 2>&1; then
        tail -20 "$out.log" >&2
        die "pipewright train failed ($b, $s, round $rep)"
      fi
      tok[$s]=$(jq -s '[.[] | select(.step != null and .step >= 2)] | (map(.tokens_per_s) | length) as $n
                       | if $n == 0 then 0 else ($n / (map(1 / .tokens_per_s) | add)) end' "$out.jsonl")
      back[$s]=$(jq '[.layers[] | (.B // (.I + .W))] | add' "$out.profile.json")
      faults=$(tail -1 "$out.time")
      ratio="" speed="" bound=""
      if [[ $s == zb-h1 ]]; then
        ratio=$(awk -v a="${back[zb-h1]}" -v b="${back[1f1b]}" 'BEGIN { printf "%.3f", a / b }')
        speed=$(awk -v a="${tok[zb-h1]}" -v b="${tok[1f1b]}" 'BEGIN { printf "%.3f", a / b }')
        jq --slurpfile fused "$tmp/$b.1f1b.$rep.profile.json" '.stages |= [range(0; length) as $i | .[$i]
             | ($fused[0].stages[$i].B / (.I + .W)) as $k | .I *= $k | .W *= $k]' "$out.profile.json" \
          > "$out.no-tax.json"
        bound=$(awk -v a="$(makespan 1f1b "$tmp/$b.1f1b.$rep.profile.json")" \
                    -v b="$(makespan zb-h1 "$out.no-tax.json")" 'BEGIN { printf "%.3f", a / b }')
      fi
      printf '%-5s %-5s %-6s %8.0f %9.1f %7s %8s %6s %13s\n' "$rep" "$b" "$s" "${tok[$s]}" "${back[$s]}" "$ratio" \
        "$speed" "$bound" "$faults"
    done
  done
done
