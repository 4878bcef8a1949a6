#!/usr/bin/env bash
# Bubble-harvesting benchmark (issue 5, "Measured"): a fixed 2-rank training
# (examples/tiny.toml, 1F1B, 4 microbatches of 8: about a fifth of each
# rank's time is bubble) with each policy (none, idle, gated) and each
# built-in side task (cnn, pagerank, image), pinned to rank 1 (the last
# stage: bubbles at the start and the end of each step; TASK_RANKS="0 1"
# hosts one task on each rank). Prints one table:
#
#   train s      training time: the sum of every step's time (metrics-out)
#   slowdown     train s / train s of the run without side tasks - 1
#                (aim: <= 1%, never above 2%)
#   in-run       the in-run paired slowdown with its 95% interval and the
#                number of pairs (--harvest-paired PAIRED): inside each run
#                the task is allowed and held in alternating blocks of
#                PAIRED steps (seeded order), and the figure is the mean over
#                pairs of adjacent blocks of allowed / held step time - 1
#                (docs/harvest.md, "Measuring the slowdown in one run"). On
#                the "none" row no task runs: it is the noise floor.
#   bubble s     measured idle time of the hosting ranks while their tasks
#                were ready (and, with PAIRED > 0, allowed)
#   work         side-task work done (the task's unit)
#   dedicated/s  the same task alone on one thread (`pipewright side-task
#                run NAME --seconds S --json`, work_per_s)
#   efficiency   work / (dedicated/s x bubble s)   (aim: >= 70%)
#   saving       FreeRide's cost saving: (work / dedicated/s - 2 x (train s -
#                train s of none)) / (2 x train s): the harvested work valued
#                in seconds of a dedicated core, minus the slowdown, as a
#                fraction of the training's cost (2 ranks: 2 cores for its time)
#   run-sav      the saving from one run (PAIRED > 0): work / dedicated/s
#                over the training's cost in the allowed blocks (2 cores
#                for half the run's time), minus the in-run slowdown: what harvesting every
#                step would save, without separate-run noise
#   pauses, pause latency mean / max (µs): bubble end -> task stopped
#
# The "none" baseline runs with --harvest-policy none and the same task
# given, so it has the same pinning and the same profiling steps; its task
# never starts. With PAIRED > 0 (the default) the task is held in half the
# steps of its run, so "slowdown" and "saving" (separate runs) are those of
# a run that harvests half its steps; PAIRED=0 runs as before, without the
# in-run column's figures. Each configuration runs REPEAT times (default 1) and the
# table shows the run with the median training time.
#
# Usage: bench/harvest_bench.sh [path/to/pipewright]
# Env:   STEPS (default 60), M (4), MBS (8), REPEAT (1), DEDICATED_S (3),
#        TASKS ("cnn pagerank image"), POLICIES ("none idle gated"),
#        MARGIN (--harvest-step-margin, default 1.2), PAIRED (--harvest-paired:
#        block length in steps, default 2; 0: off), TASK_RANKS (ranks that
#        host a task, default "1"), KEEP_TMP=1 keeps the work dir.
# Needs: bash, coreutils, awk, grep, sed, jq (scripts/install-deps.sh). No python.
set -euo pipefail

die() { echo "harvest_bench: error: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
pw=${1:-$root/build/src/cli/pipewright}
[[ -x $pw ]] || die "pipewright binary not found or not executable: $pw (usage: $0 [path/to/pipewright])"
pw=$(cd "$(dirname "$pw")" && pwd)/$(basename "$pw")
config=$root/examples/tiny.toml
[[ -f $config ]] || die "model config not found: $config"

STEPS=${STEPS:-60}
M=${M:-4}
MBS=${MBS:-8}
REPEAT=${REPEAT:-1}
DEDICATED_S=${DEDICATED_S:-3}
TASKS=${TASKS:-"cnn pagerank image"}
POLICIES=${POLICIES:-"none idle gated"}
MARGIN=${MARGIN:-1.2}
PAIRED=${PAIRED:-2}
TASK_RANKS=${TASK_RANKS:-1}
PP=2  # pipeline ranks: the training's cost is PP cores for its time
command -v jq >/dev/null || die "needs jq (scripts/install-deps.sh installs it)"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/harvest_bench.XXXXXX")
if [[ ${KEEP_TMP:-0} == 1 ]]; then echo "work dir: $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi
head -c 2000000 /dev/urandom > "$tmp/random.bin"
# A copy, so a rebuild during the run does not change the binary; the
# front end hands train and side-task to pipewright-runtime beside it.
cp "$pw" "$tmp/pipewright" || die "cannot copy $pw"
runtime=$(dirname "$pw")/pipewright-runtime
[[ -x $runtime ]] || die "no $runtime beside $pw: build it (scripts/build.sh)"
cp "$runtime" "$tmp/pipewright-runtime" || die "cannot copy $runtime"
pw=$tmp/pipewright

# num KEY FILE: the first number after "KEY": in FILE (0 if none)
num() { { grep -o "\"$1\": *[-0-9.eE+]*" "$2" || true; } | head -1 | sed 's/.*: *//' | awk '{ print $1 + 0 }'; }

# train NAME TASK POLICY: writes $tmp/NAME.{jsonl,log}; prints the training seconds
train() {
  local name=$1 task=$2 policy=$3 r
  local placed=()
  for r in $TASK_RANKS; do placed+=(--side-task "$task@rank=$r"); done
  if ! "$pw" train --config "$config" --pp "$PP" --schedule 1f1b --microbatches "$M" --microbatch-size "$MBS" \
      --steps "$STEPS" --seed 1234 --data "$tmp/random.bin" --eval-batches 0 --timeout 1200 \
      "${placed[@]}" --harvest-policy "$policy" --harvest-step-margin "$MARGIN" \
      --harvest-paired "$PAIRED" --metrics-out "$tmp/$name.jsonl" \
      > "$tmp/$name.log" 2>&1; then
    tail -20 "$tmp/$name.log" >&2
    die "pipewright train failed for $name"
  fi
  grep '"observers"' "$tmp/$name.jsonl" > "$tmp/$name.report" || die "no harvest report in $tmp/$name.jsonl"
  # Step seconds = tokens per step / tokens_per_s.
  awk -v tok=$((M * MBS * 64)) '/"tokens_per_s"/ {
      t = $0; sub(/.*"tokens_per_s": */, "", t); sub(/[,}].*/, "", t); if (t + 0 > 0) sec += tok / t }
    END { printf "%.4f\n", sec }' "$tmp/$name.jsonl"
}

# median_run NAME TASK POLICY: runs REPEAT times, keeps the median; prints its seconds
median_run() {
  local name=$1 task=$2 policy=$3 i
  for ((i = 0; i < REPEAT; i++)); do
    echo "harvest_bench: $task / $policy (run $((i + 1))/$REPEAT) ..." >&2
    echo "$(train "$name.$i" "$task" "$policy") $i"
  done | sort -n | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) { print $1, $2 }' > "$tmp/$name.median"
  read -r secs idx < "$tmp/$name.median"
  cp "$tmp/$name.$idx.report" "$tmp/$name.report"
  echo "$secs"
}

printf "%-9s %-7s %8s %9s %-30s %9s %12s %12s %10s %8s %9s %7s %17s\n" task policy "train s" slowdown \
  "in-run [95% CI] pairs" "bubble s" work "dedicated/s" efficiency saving "run-sav" pauses "latency mean/max"
for task in $TASKS; do
  echo "harvest_bench: dedicated throughput of $task ($DEDICATED_S s) ..." >&2
  "$pw" side-task run "$task" --seconds "$DEDICATED_S" --json > "$tmp/$task.dedicated.json" \
    || die "pipewright side-task run $task failed"
  rate=$(num work_per_s "$tmp/$task.dedicated.json")
  unit=$(grep -o '"unit": *"[^"]*"' "$tmp/$task.dedicated.json" | head -1 | sed 's/.*: *"//; s/"$//')
  base=""
  for policy in $POLICIES; do
    secs=$(median_run "$task.$policy" "$task" "$policy")
    [[ -z $base ]] && base=$secs
    report=$tmp/$task.$policy.report
    # The ranks that host a task: their bubbles, work and pauses add up;
    # the in-run figure is the first hosting rank's (every rank's steps
    # take the pipeline's time). Held blocks give the tasks no bubbles:
    # with PAIRED > 0 only the allowed ones count. The baseline has no
    # task running: its bubbles are the whole run's on the same ranks.
    jq -r --argjson paired "$PAIRED" --arg policy "$policy" --arg ranks "$TASK_RANKS" '
      ($ranks | split(" ") | map(select(. != "") | tonumber)) as $rs
      | [.observers[] | select(.world_rank as $w | $rs | index($w))] as $h
      | ($h | map(if $policy == "none" then .bubble_seconds
                  elif $paired > 0 then .bubble_seconds_allowed else .bubble_seconds_ready end) | add) as $bubble
      | ($h | map(.tasks | map(.work) | add // 0) | add) as $work
      | ($h | map(.pauses) | add) as $pauses
      | (if $pauses > 0 then ($h | map(.pause_latency_mean_us * .pauses) | add) / $pauses else 0 end) as $lat
      | ($h | map(.pause_latency_max_us) | max) as $latmax
      | ($h[0].paired // {}) as $p
      | [$bubble, $work, $pauses, $lat, $latmax, ($p.pairs // 0), ($p.slowdown // 0), ($p.ci95_low // 0),
         ($p.ci95_high // 0)] | map(tostring) | join(" ")' "$report" > "$tmp/fig" || die "cannot read $report"
    read -r bubble work pauses lat_mean lat_max pairs in_slow in_lo in_hi < "$tmp/fig"
    inrun="-"
    if ((PAIRED > 0)); then
      inrun=$(awk -v m="$in_slow" -v lo="$in_lo" -v hi="$in_hi" -v n="$pairs" '
        BEGIN { if (n > 0) printf "%+.2f%% [%+.2f, %+.2f] %d", 100 * m, 100 * lo, 100 * hi, n; else print "no pairs" }')
    fi
    awk -v task="$task" -v policy="$policy" -v secs="$secs" -v base="$base" -v bubble="$bubble" \
        -v work="$work" -v rate="$rate" -v unit="$unit" -v pauses="$pauses" -v lm="$lat_mean" -v lx="$lat_max" \
        -v inrun="$inrun" -v paired="$PAIRED" -v pairs="$pairs" -v in_slow="$in_slow" -v ranks="$PP" '
      BEGIN {
        slow = base > 0 ? secs / base - 1 : 0
        eff = (rate > 0 && bubble > 0) ? work / (rate * bubble) : 0
        # The training costs RANKS cores for its time: the saving is per
        # core-second of training, as FreeRide counts it per GPU.
        saving = secs > 0 && rate > 0 ? (work / rate - ranks * (secs - base)) / (ranks * secs) : 0
        in_saving = "-"
        if (paired > 0 && pairs > 0 && rate > 0 && policy != "none")
          in_saving = sprintf("%+.1f%%", 100 * (work / rate / (ranks * secs / 2) - in_slow))
        printf "%-9s %-7s %8.2f %+8.2f%% %-30s %9.2f %12.4g %12.4g %9.1f%% %+7.1f%% %9s %7d %8.0f/%-8.0f\n",
               task, policy, secs, 100 * slow, inrun, bubble, work, rate, 100 * eff, 100 * saving, in_saving,
               pauses, lm, lx }'
    grep -h "side task failed" "$tmp/$task.$policy."*.log 2>/dev/null | head -3 >&2 || true
  done
done
echo "(work in the task's unit: cnn images, pagerank edges, image pixels; rank(s) $TASK_RANKS host the task)"
((PAIRED > 0)) && echo "(in-run: allowed vs held blocks of $PAIRED steps in the same run, mean over pairs [95% t-interval] and the number of pairs; slowdown and saving: separate runs, each harvesting half its steps; run-sav: from the one run, as if every step harvested)"
