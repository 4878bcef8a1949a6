#!/usr/bin/env bash
# Bubble-harvesting benchmark (issue 5, "Measured"): a fixed 2-rank training
# (examples/tiny.toml, 1F1B, 4 microbatches of 8: about a fifth of each
# rank's time is bubble) with each policy (none, idle, gated) and each
# built-in side task (cnn, pagerank, image), pinned to rank 1 (the last
# stage: bubbles at the start and the end of each step). Prints one table:
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
#   bubble s     measured idle time of rank 1 while its task was ready (and,
#                with PAIRED > 0, allowed)
#   work         side-task work done (the task's unit)
#   dedicated/s  the same task alone on one thread (`pipewright side-task
#                run NAME --seconds S --json`, work_per_s)
#   efficiency   work / (dedicated/s x bubble s)   (aim: >= 70%)
#   saving       FreeRide's cost saving: (work / dedicated/s - (train s -
#                train s of none)) / train s: the harvested work valued in
#                seconds of a dedicated core, minus the slowdown, as a
#                fraction of the training time
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
#        block length in steps, default 2; 0: off),
#        KEEP_TMP=1 keeps the work dir.
# Needs: bash, coreutils, awk, grep, sed. No python.
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
  local name=$1 task=$2 policy=$3
  if ! "$pw" train --config "$config" --pp 2 --schedule 1f1b --microbatches "$M" --microbatch-size "$MBS" \
      --steps "$STEPS" --seed 1234 --data "$tmp/random.bin" --eval-batches 0 --timeout 1200 \
      --side-task "$task@rank=1" --harvest-policy "$policy" --harvest-step-margin "$MARGIN" \
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

printf "%-9s %-7s %8s %9s %-30s %9s %12s %12s %10s %8s %7s %17s\n" task policy "train s" slowdown \
  "in-run [95% CI] pairs" "bubble s" work "dedicated/s" efficiency saving pauses "latency mean/max"
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
    # Rank 1's report is the second object of the observers line; each
    # rank's object opens with its first key (sorted): "bubble_seconds".
    awk -F'[{]"bubble_seconds":' '{ print "{\"bubble_seconds\":" $3 }' "$report" > "$tmp/r1.json"
    bubble=$(num bubble_seconds_ready "$tmp/r1.json")
    # Held blocks give the task no bubbles: count only the allowed ones.
    ((PAIRED > 0)) && bubble=$(num bubble_seconds_allowed "$tmp/r1.json")
    inrun="-"
    if ((PAIRED > 0)); then
      inrun=$(awk -v m="$(num slowdown "$tmp/r1.json")" -v lo="$(num ci95_low "$tmp/r1.json")" \
                  -v hi="$(num ci95_high "$tmp/r1.json")" -v n="$(num pairs "$tmp/r1.json")" '
        BEGIN { if (n > 0) printf "%+.2f%% [%+.2f, %+.2f] %d", 100 * m, 100 * lo, 100 * hi, n; else print "no pairs" }')
    fi
    work=$({ grep -o '"work": *[-0-9.eE+]*' "$tmp/r1.json" || true; } | sed 's/.*: *//' | awk '{ s += $1 } END { print s + 0 }')
    # The baseline has no task: its bubbles are the whole run's.
    [[ $policy == none ]] && bubble=$(num bubble_seconds "$tmp/r1.json")
    pauses=$(num pauses "$tmp/r1.json")
    lat_mean=$(num pause_latency_mean_us "$tmp/r1.json")
    lat_max=$(num pause_latency_max_us "$tmp/r1.json")
    awk -v task="$task" -v policy="$policy" -v secs="$secs" -v base="$base" -v bubble="$bubble" \
        -v work="$work" -v rate="$rate" -v unit="$unit" -v pauses="$pauses" -v lm="$lat_mean" -v lx="$lat_max" \
        -v inrun="$inrun" '
      BEGIN {
        slow = base > 0 ? secs / base - 1 : 0
        eff = (rate > 0 && bubble > 0) ? work / (rate * bubble) : 0
        saving = secs > 0 && rate > 0 ? (work / rate - (secs - base)) / secs : 0
        printf "%-9s %-7s %8.2f %+8.2f%% %-30s %9.2f %12.4g %12.4g %9.1f%% %+7.1f%% %7d %8.0f/%-8.0f\n",
               task, policy, secs, 100 * slow, inrun, bubble, work, rate, 100 * eff, 100 * saving, pauses, lm, lx }'
    grep -h "side task failed" "$tmp/$task.$policy."*.log 2>/dev/null | head -3 >&2 || true
  done
done
echo "(work in the task's unit: cnn images, pagerank edges, image pixels; rank 1 hosts the task)"
((PAIRED > 0)) && echo "(in-run: allowed vs held blocks of $PAIRED steps in the same run, mean over pairs [95% t-interval] and the number of pairs; slowdown and saving: separate runs, each harvesting half its steps)"
