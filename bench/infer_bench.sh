#!/usr/bin/env bash
# Inference benchmark (issue 6, "Measured"): the same prompt set on N = 4
# local ranks (one thread each) under one per-rank memory budget, in each
# weight-pool mode (auto twice: as it runs on one host, which is shared, and
# with --network-pool, WaS or CaS by its cost model), and one table:
#
#   kv tok/rank   KV cache capacity in tokens per rank (budget - weights -
#                 weight cache - workspace, in whole blocks)
#   peak seq      most sequences running at once on a rank
#   tok/s         generated tokens / generation time of the slowest rank
#   B/token       bytes received by all ranks (weights or activations) per
#                 generated token
#   was/cas       forward passes run as WaS / CaS (auto chooses per pass;
#                 shared runs neither: every block is read in place)
#   switches      auto: consecutive passes that changed mode
#   vs repl       kv capacity and tok/s over replicate's (aim: >= 1.8x, 1.5x)
#   mem/plan      measured memory (the rank's own, anonymous, resident peak
#                 while generating, above its start; shared libraries' code
#                 pages apart) over the plan's (aim: within 10 %)
#
# First, one rank alone (replicate, 256 MiB, no budget pressure) at SEQS
# sequences at once (default 1, 16, 128), with an fp32, an fp16 and an int8 KV cache
# (ONE_RANK_KV), each with the weights prepacked and plain (LAYOUTS,
# --weights-layout; "plain" in the weights column where the CPU cannot
# prepack): decode tok/s (passes with only
# decode rows: the batch's steady state) and the model math of those passes
# (decoder.h PassFlops: every Linear, attention over the visible keys, the
# head) as GFLOP/s and as a share of the core's GEMM rate, measured in the
# same run just before and just after each row: the faster of OpenBLAS's
# GEMM (split_backward_torch_bench BM_Gemm/small, with the kernels
# inference uses) and oneDNN's over prepacked weights
# (prepacked_linear_torch_bench BM_PrepackedLinears/256), best of 2 each,
# the higher side counts: column GEMM; aim: >= 50 % at 128), and
# the share of those passes' time spent in attention (attn %: it reads the
# K/V history, memory-bound; the rest is mostly the matmuls).
#
# Then the WaS/CaS crossover: WaS and CaS runs with at most B sequences per
# rank (B = 1, 2, 4, ...; decode passes have B rows; 2B prompts per rank, 16
# tokens each), the measured crossover being the smallest B from which WaS is
# at least as fast at every larger B, against the cost
# model's prediction (CrossoverRows over the pool's start-up calibration).
#
# Model: examples/small.toml (vocab 256, width 256, 8 layers, seq 128, about
# 6.5 M parameters = 26 MB fp32), random init; prompts: examples/prompts.jsonl
# (128 lines of the licences in /usr/share/common-licenses); greedy, MAX_TOKENS
# per prompt; budget BUDGET per rank, chosen so that replicate's weights take
# most of it.
#
# Usage: bench/infer_bench.sh [path/to/pipewright]
# Env:   BUDGET (default 36MiB), RANKS (4), MAX_TOKENS (48), SWEEP ("1 2 4 8 16"; "" skips the sweep),
#        KV_DTYPE (fp32; fp16 halves the KV cache's bytes, int8 about quarters them, every run), ONE_RANK_KV ("fp32 fp16 int8": the
#        one-rank rows' cache types),
#        SEQS ("1 16 128"; "" skips the one-rank runs), ONLY_ONE_RANK=1 (stop after them),
#        LAYOUTS ("panels prepacked plain": the one-rank runs' --weights-layout, each in turn;
#        prepacked and plain run with --batch-invariant off),
#        BATCH_INVARIANT ("on"; "on off": panels with --batch-invariant on, then off: column inv),
#        GEMM_BENCH (default: bench/split_backward_torch_bench next to the binary's build),
#        PREPACKED_BENCH (default: prepacked_linear_torch_bench beside GEMM_BENCH),
#        REPEATS (3: rounds of the pooled-mode runs; the table gives the median tok/s),
#        KEEP_TMP=1 keeps the work dir. Needs: bash, jq, awk.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PW=${1:-$root/build/src/cli/pipewright}
BUDGET=${BUDGET:-36MiB}
RANKS=${RANKS:-4}
MAX_TOKENS=${MAX_TOKENS:-48}
REPEATS=${REPEATS:-3}
SWEEP=${SWEEP-1 2 4 8 16}
CONFIG=$root/examples/small.toml
PROMPTS=$root/examples/prompts.jsonl
tmp=$(mktemp -d)
[ "${KEEP_TMP:-0}" = 1 ] && echo "work dir: $tmp" || trap 'rm -rf "$tmp"' EXIT
command -v jq >/dev/null || { echo "infer_bench: needs jq"; exit 1; }

infer() {  # infer NAME PROMPTS ARGS...
  local name=$1 prompts=$2
  shift 2
  if ! "$PW" infer --config "$CONFIG" --prompts "$prompts" --out "$tmp/$name.jsonl" --ranks "$RANKS" \
       --memory-budget "$BUDGET" --summary-json "$tmp/$name.json" --kv-dtype "${KV_DTYPE:-fp32}" \
       "$@" >"$tmp/$name.log" 2>&1; then
    echo "infer_bench: run $name failed:"; tail -20 "$tmp/$name.log"; exit 1
  fi
}

SEQS=${SEQS-1 16 128}
if [[ -n $SEQS ]]; then
  gemm_bench=${GEMM_BENCH:-$(dirname "$(dirname "$(dirname "$PW")")")/bench/split_backward_torch_bench}
  # The OpenBLAS core the runtime picks for itself (it re-executes with
  # OPENBLAS_CORETYPE when the library misdetects the CPU): the GEMM
  # reference must use the same kernels.
  head -n 1 "$PROMPTS" >"$tmp/core-prompt.jsonl"
  core=$(OPENBLAS_VERBOSE=2 "$PW" infer --config "$CONFIG" --prompts "$tmp/core-prompt.jsonl" --out "$tmp/core.jsonl" \
           --ranks 1 --max-tokens 1 2>&1 | grep -o 'Core: [A-Za-z0-9]*' | tail -1 | sed 's/Core: //' || true)
  prepacked_bench=${PREPACKED_BENCH:-$(dirname "$gemm_bench")/prepacked_linear_torch_bench}
  # best_gflops BENCH FILTER: the best of 2 runs of a Google Benchmark's
  # GFLOP/s counter ("" when the bench is missing or fails).
  best_gflops() {
    [[ -x $1 ]] || return 0
    OPENBLAS_CORETYPE=${core:-${OPENBLAS_CORETYPE:-}} OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$1" \
      --benchmark_filter="$2" --benchmark_repetitions=2 --benchmark_format=csv >"$tmp/gemm.csv" 2>/dev/null || true
    local col
    col=$(head -1 "$tmp/gemm.csv" | tr ',' '\n' | grep -n 'GFLOP/s' | cut -d: -f1 || true)
    [[ -n $col ]] && grep "^\"$2" "$tmp/gemm.csv" | grep -v '_mean\|_median\|_stddev\|_cv' |
                       cut -d, -f"$col" | awk '$1 > m { m = $1 } END { if (m > 0) printf "%.1f\n", m }'
    return 0
  }
  # The core's GEMM rate: the faster of OpenBLAS's (a 512-wide GEMM) and
  # oneDNN's over prepacked weights (the model's Linears at 256 rows, what
  # the prepacked layout runs), whichever library is faster on this CPU.
  gemm_rate() {
    printf '%s\n%s\n' "$(best_gflops "$gemm_bench" 'BM_Gemm/small')" \
      "$(best_gflops "$prepacked_bench" 'BM_PrepackedLinears/256')" |
      awk '$1 > m { m = $1 } END { if (m > 0) printf "%.1f\n", m }'
  }
  [[ -x $gemm_bench ]] || echo "infer_bench: warning: no GEMM reference ($gemm_bench missing); % column left blank"
  echo "infer_bench: one rank, replicate, 256 MiB, $MAX_TOKENS tokens per prompt; GEMM: the core's rate (the faster of OpenBLAS ${core:-default} and oneDNN prepacked) measured just before and just after each row, the higher"
  printf '%6s %4s %9s %4s %8s %12s %14s %8s %10s %7s %14s\n' seqs kv weights inv prompts "decode tok/s" "decode GFLOP/s" GEMM "% of GEMM" "attn %" "run GFLOP/s"
  for s in $SEQS; do
    n=$((s < 8 ? 8 : 2 * s)); (( n > $(wc -l <"$PROMPTS") )) && n=$(wc -l <"$PROMPTS")
    head -n "$n" "$PROMPTS" >"$tmp/one-$s.jsonl"
    for kv in ${ONE_RANK_KV:-fp32 fp16 int8}; do
      # Each weights layout (--weights-layout) back to back: their ratio is
      # measured side by side. "plain" where the CPU cannot prepack.
      for layout in ${LAYOUTS:-panels prepacked plain}; do
      invs=${BATCH_INVARIANT:-on}
      # prepacked and plain cannot keep the guarantee: they run without it.
      [[ $layout = prepacked || $layout = plain ]] && invs=off
      for inv in $invs; do
        # The host's speed drifts (shared machines): the reference is
        # taken on both sides of the run and the higher one counts, so the
        # share is never flattered by a slow moment of the GEMM.
        before=$(gemm_rate)
        KV_DTYPE=$kv RANKS=1 BUDGET=256MiB infer "one-$s-$kv-$layout-$inv" "$tmp/one-$s.jsonl" --mode replicate \
          --max-sequences "$s" --max-tokens "$MAX_TOKENS" --weights-layout "$layout" --batch-invariant "$inv"
        after=$(gemm_rate)
        gemm=$(printf '%s\n%s\n' "$before" "$after" | awk '$1 > m { m = $1 } END { if (m > 0) print m; else print 0 }')
        jq -r --arg s "$s" --arg kv "$kv" --arg n "$n" --arg g "$gemm" --arg inv "$inv" '[$s, $kv, .rank_summaries[0].weights_layout, $inv, $n,
            .decode_tokens_per_s, .decode_flops_per_s / 1e9, ($g | tonumber),
            (if ($g | tonumber) > 0 then 100 * .decode_flops_per_s / 1e9 / ($g | tonumber) else -1 end),
            100 * .decode_attention_share, .model_flops_per_s / 1e9] | @tsv' \
          "$tmp/one-$s-$kv-$layout-$inv.json" |
          awk -F'\t' '{ printf "%6d %4s %9s %4s %8d %12.0f %14.1f %8s %10s %7s %14.1f\n", $1, $2, $3, $4, $5, $6, $7, ($8 > 0 ? sprintf("%.0f", $8) : "-"), ($9 < 0 ? "-" : sprintf("%.0f %%", $9)), sprintf("%.0f %%", $10), $11 }'
      done
      done
    done
  done
  echo
  [[ ${ONLY_ONE_RANK:-0} = 1 ]] && exit 0
fi

echo "infer_bench: $RANKS ranks, budget $BUDGET per rank, $(wc -l <"$PROMPTS") prompts x $MAX_TOKENS tokens, $CONFIG"
# auto on local ranks runs shared (one host); auto-net is auto with
# --network-pool: its choice between WaS and CaS.
MODES="replicate was cas shared auto auto-net"
# REPEATS rounds, each running every mode once (interleaved, so a drift of
# the host's speed touches every mode alike); round 1's files are $mode.*.
for round in $(seq 1 "$REPEATS"); do
  for mode in $MODES; do
    flags=(--mode "${mode%-net}")
    [ "$mode" = auto-net ] && flags+=(--network-pool)
    name=$mode
    [ "$round" -gt 1 ] && name=$mode-r$round
    infer "$name" "$PROMPTS" "${flags[@]}" --max-tokens "$MAX_TOKENS" --predict-crossover
  done
done
grep -m1 "memory:" "$tmp/replicate.log" | sed 's/^/replicate /'
grep -m1 "memory:" "$tmp/was.log" | sed 's/^/was       /'

# One mode's rounds as one JSON object: round 1's summary plus the median
# tok/s, every round's tok/s and the largest mem/plan.
rounds() {
  local files=("$tmp/$1.json")
  for round in $(seq 2 "$REPEATS"); do files+=("$tmp/$1-r$round.json"); done
  jq -s '.[0] + {tps_runs: [.[].tokens_per_s], tps_median: ([.[].tokens_per_s] | sort | .[(length - 1) / 2 | floor]),
                 mem_over_plan: ([.[] | (.memory_measured_max_bytes // 0) / (.memory_planned_bytes // 1)] | max)}' "${files[@]}"
}
base_kv=$(jq '.kv_capacity_tokens_per_rank' "$tmp/replicate.json")
base_tps=$(rounds replicate | jq '.tps_median')
printf '\n%-10s %12s %9s %9s %11s %6s %6s %8s %9s %9s %6s %9s  %s\n' mode "kv tok/rank" "peak seq" "tok/s" "B/token" was cas switches "kv x" "tok/s x" exact "mem/plan" "tok/s of each round"
for mode in $MODES; do
  rounds "$mode" | jq -r --argjson bkv "$base_kv" --argjson btps "$base_tps" --arg mode "$mode" \
    '[$mode, .kv_capacity_tokens_per_rank, .peak_sequences_per_rank, .tps_median, .bytes_moved_per_token,
      .passes_was, .passes_cas, .switches, (.kv_capacity_tokens_per_rank / $bkv), (.tps_median / $btps),
      .accounting_exact, .mem_over_plan, ([.tps_runs[] | floor | tostring] | join(" "))] | @tsv' |
    awk -F'\t' '{ printf "%-10s %12d %9d %9.1f %11.0f %6d %6d %8d %8.2fx %8.2fx %6s %8.2fx  %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13 }'
done
echo "tok/s: the median of $REPEATS rounds (tok/s x against replicate's median); was/cas/switches, exact: round 1"
echo "mem/plan: the largest rank's own (anonymous) resident peak while generating (above its start) over its plan (budget - slack), the largest of the rounds"

# Auto against the better fixed mode it could have run, round by round: the
# modes of one round ran minutes apart at most, so their ratio is steadier
# than a ratio of medians when the host's speed drifts between rounds.
tps() { jq '.tokens_per_s' "$tmp/$1.json"; }
against_best() {  # against_best AUTO_MODE FIXED_MODE...
  local auto=$1 ratios=() round suffix best m t
  shift
  for round in $(seq 1 "$REPEATS"); do
    suffix=""
    [ "$round" -gt 1 ] && suffix=-r$round
    best=0
    for m in "$@"; do
      t=$(tps "$m$suffix")
      best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
    done
    ratios+=("$(awk -v a="$(tps "$auto$suffix")" -v b="$best" 'BEGIN { printf "%.2f", a / b }')")
  done
  printf '%s\n' "${ratios[@]}" | sort -n | awk -v auto="$auto" -v fixed="$*" -v n="$REPEATS" '
    { r[NR] = $1 } END { printf "%-8s vs the better of %s, round by round: median %.2fx (sorted:", auto, fixed, r[int((n + 1) / 2)]
                         for (i = 1; i <= NR; i++) printf " %s", r[i]; print ")" }'
}
against_best auto replicate was cas shared
against_best auto-net was cas

# Identical greedy outputs across modes (the benchmark's own sanity check).
for mode in ${MODES#replicate }; do
  if ! diff <(jq -c '[.id, .tokens]' "$tmp/replicate.jsonl" | sort) <(jq -c '[.id, .tokens]' "$tmp/$mode.jsonl" | sort) >/dev/null; then
    echo "WARNING: $mode outputs differ from replicate's"
  fi
done

predicted=$(jq '.predicted_crossover_rows // -1' "$tmp/was.json")
echo
echo "crossover sweep: WaS vs CaS tok/s with at most B sequences per rank"
printf '%4s %10s %10s %8s\n' B "was tok/s" "cas tok/s" faster
measured=-1
winners=()
for b in $SWEEP; do
  # 2 prompts per sequence slot and rank, 16 tokens each: every pass has B rows
  # but for the tail, and small B stays quick.
  head -n $((RANKS * b * 2)) "$PROMPTS" >"$tmp/sweep-$b.jsonl"
  infer "sweep-was-$b" "$tmp/sweep-$b.jsonl" --mode was --max-sequences "$b" --max-tokens 16
  infer "sweep-cas-$b" "$tmp/sweep-$b.jsonl" --mode cas --max-sequences "$b" --max-tokens 16
  w=$(jq '.tokens_per_s' "$tmp/sweep-was-$b.json")
  c=$(jq '.tokens_per_s' "$tmp/sweep-cas-$b.json")
  faster=$(awk -v w="$w" -v c="$c" 'BEGIN { print (w >= c) ? "was" : "cas" }')
  printf '%4d %10.1f %10.1f %8s\n' "$b" "$w" "$c" "$faster"
  winners+=("$b:$faster")
done
# Measured crossover: the smallest B from which WaS is at least as fast at
# every larger B of the sweep (a noisy single win below that does not count).
for ((i = ${#winners[@]} - 1; i >= 0; i--)); do
  [ "${winners[$i]#*:}" = was ] || break
  measured=${winners[$i]%%:*}
done
echo "crossover batch size: measured $measured sequences/pass (smallest B from which WaS >= CaS at every larger B; -1: CaS at the largest B), " \
     "predicted $predicted rows/pass (cost model, rank 0 calibration: $(jq -c '.calibration' "$tmp/was.json"))"

# Work that follows the ranks: a prompt file whose every RANKS-th line asks
# for MAX_TOKENS tokens and the others for 4, so round-robin shares hand
# rank 0 all the long prompts; the shared queue (--split queue, the default)
# lets the other ranks take more. 4 copies of the prompts, replicate mode.
jq -c -n --argjson n "$RANKS" --argjson long "$MAX_TOKENS" '[inputs] as $p | range(0; 4) as $c |
  range(0; $p | length) as $i | ($c * ($p | length) + $i) as $k |
  $p[$i] + {id: "s\($k)", max_tokens: (if $k % $n == 0 then $long else 4 end)}' "$PROMPTS" >"$tmp/skewed.jsonl"
echo
echo "work that follows the ranks: $(wc -l <"$tmp/skewed.jsonl") prompts, every ${RANKS}th asks for $MAX_TOKENS tokens, the rest for 4 (replicate)"
printf '%-12s %9s %14s %14s\n' split "tok/s" "slowest rank s" "fastest rank s"
for split in round-robin queue; do
  infer "split-$split" "$tmp/skewed.jsonl" --mode replicate --split "$split"
  jq -r --arg s "$split" '[$s, .tokens_per_s, ([.rank_summaries[].run_seconds] | max), ([.rank_summaries[].run_seconds] | min)] | @tsv' \
    "$tmp/split-$split.json" | awk -F'\t' '{ printf "%-12s %9.1f %14.2f %14.2f\n", $1, $2, $3, $4 }'
done
if ! diff <(jq -c '[.id, .tokens]' "$tmp/split-queue.jsonl" | sort) <(jq -c '[.id, .tokens]' "$tmp/split-round-robin.jsonl" | sort) >/dev/null; then
  echo "WARNING: queue outputs differ from round-robin's"
fi
