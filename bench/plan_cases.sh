#!/usr/bin/env bash
# The planner against the built-in families on the cases of the issue
# "Schedule language and automated scheduler": uniform costs with and
# without a memory cap, an LM head (last stage 1.5x), an embedding (first
# stage 1.5x), an encoder front (first stage 2x F and another I:W ratio),
# per-layer costs (32 or 128 layers, the last 3x), communication latency, a
# cap that only recomputation meets well (2 microbatches on p = 8);
# and clusters (examples/clusters): two sites joined by a 1 Gbit/s, 20 ms
# link (times in ms, 10 ms per layer and action, 4 MB activations), the
# same with the sites' ranks numbered alternately, one rank 1.5x slower, and
# the planner's scale case p = 64, m = 256 on two sites.
# Prints one markdown table row per case: the best built-in that fits the
# cap, what the planner found, the lower bound, and the search's own cost.
#
# Usage: bench/plan_cases.sh [PATH/TO/pipewright]   (default build/src/cli/pipewright)
# Memory is in microbatches of one rank's share (no activation bytes given).
set -euo pipefail
PW=${1:-build/src/cli/pipewright}
[ -x "$PW" ] || { echo "no pipewright binary at $PW; build first (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# per_stage FILE P "F I W" (all stages) [STAGE "F I W"]: a cost file with one
# entry per stage, stage STAGE (0-based; -1 the last) overridden.
per_stage() {
  local file=$1 p=$2 base=$3 which=${4:-} special=${5:-}
  [ "$which" = "-1" ] && which=$((p - 1))
  local entries=() s f i w
  for ((s = 0; s < p; s++)); do
    read -r f i w <<<"$base"
    if [ -n "$which" ] && [ "$s" -eq "$which" ]; then read -r f i w <<<"$special"; fi
    entries+=("{\"F\": $f, \"I\": $i, \"W\": $w}")
  done
  local IFS=,
  echo "{\"stages\": [${entries[*]}]}" >"$file"
}

per_stage "$tmp/lm8.json" 8 "1 1 1" -1 "1.5 1.5 1.5"
per_stage "$tmp/lm32.json" 32 "1 1 1" -1 "1.5 1.5 1.5"
per_stage "$tmp/emb8.json" 8 "1 1 1" 0 "1.5 1.5 1.5"
per_stage "$tmp/enc8.json" 8 "1 1 1" 0 "2 1.5 0.5"
per_stage "$tmp/enc32.json" 32 "1 1 1" 0 "2 1.5 0.5"
per_stage "$tmp/layers32.json" 32 "1 1 1" -1 "3 3 3"
per_stage "$tmp/layers128.json" 128 "1 1 1" -1 "3 3 3"

echo "| case | p | m | cap | best built-in | its makespan | found | saving | lower bound | above bound | evaluated | search CPU s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"

# row NAME P M CAP ARGS...: runs the planner and prints one row.
row() {
  local name=$1 p=$2 m=$3 cap=$4
  shift 4
  local cap_args=()
  [ "$cap" != "-" ] && cap_args=(--memory-cap "$cap")
  local out
  out=$("$PW" plan -p "$p" -m "$m" "${cap_args[@]}" "$@")
  # The text report's fixed lines (cli/cmd_plan.cc): "best", "best built-in",
  # "lower bound" and "search:".
  awk -v name="$name" -v p="$p" -v m="$m" -v cap="$cap" '
    /^search:/ { evaluated = $2; for (i = 1; i <= NF; i++) if ($i == "CPU);") cpu = substr($(i - 2), 2) }
    /^best built-in/ {
      if ($3 == "none") { bname = "none fits"; bmake = "-"; next }
      bmake = $3
      match($0, /peak [^ ]+  /)
      bname = substr($0, RSTART + RLENGTH)
      sub(/  \(the plan.*/, "", bname)
    }
    /^best  / { found = $2 }
    /^lower bound/ { lb = $3 }
    END {
      saving = (bmake == "-") ? "-" : sprintf("%.1f%%", 100 * (1 - found / bmake))
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f%% | %s | %s |\n", name, p, m, cap, bname, bmake,
             found, saving, lb, 100 * (found / lb - 1), evaluated, cpu
    }' <<<"$out"
}

row "uniform" 4 8 - --cost F=1,I=1,W=1
row "uniform, cap p" 4 8 4 --cost F=1,I=1,W=1
row "uniform" 8 16 - --cost F=1,I=1,W=1
row "uniform, cap p (tight)" 8 16 8 --cost F=1,I=1,W=1
row "uniform, cap p (tight)" 32 128 32 --cost F=1,I=1,W=1
row "LM head 1.5x" 8 16 - --cost-file "$tmp/lm8.json"
row "LM head 1.5x, cap p" 8 16 8 --cost-file "$tmp/lm8.json"
row "LM head 1.5x, cap p" 32 128 32 --cost-file "$tmp/lm32.json"
row "embedding 1.5x" 8 16 - --cost-file "$tmp/emb8.json"
row "encoder front (2F, I:W 3:1)" 8 16 - --cost-file "$tmp/enc8.json"
row "encoder front (2F, I:W 3:1)" 32 128 - --cost-file "$tmp/enc32.json"
row "32 layers, head 3x" 8 16 - --cost-file "$tmp/layers32.json" --layers 32
row "128 layers, head 3x" 32 128 - --cost-file "$tmp/layers128.json" --layers 128
row "uniform, comm latency 0.1" 8 32 - --cost F=1,I=1,W=1 --comm-latency 0.1
row "cap 2, recomputation" 8 32 2 --cost F=1,I=1,W=1
clusters=$(dirname "$0")/../examples/clusters
wan=(--cost F=10,I=10,W=10 --output-bytes 4MB --comm-latency 0.05 --comm-bandwidth 12.5MB)
row "two sites, 1 Gbit/s 20 ms" 8 32 - "${wan[@]}" --cluster "$clusters/two-sites.json" --layers 32
row "two sites, 1 Gbit/s 20 ms" 16 64 - "${wan[@]}" --sites 0-7,8-15 --cross-site-latency 20 \
  --cross-site-bandwidth 125000 --layers 64
row "two sites numbered alternately" 8 32 - "${wan[@]}" --sites 0+2+4+6,1+3+5+7 --cross-site-latency 20 \
  --cross-site-bandwidth 125000 --layers 32
row "one rank 1.5x slower" 4 16 - --cost F=1,I=1,W=1 --cluster "$clusters/slow-rank.json" --layers 32
row "one rank 1.5x slower" 8 32 - --cost F=1,I=1,W=1 --rank-speed 1,1,1,1,1,1,1,0.667 --layers 64
row "two sites (scale)" 64 256 - "${wan[@]}" --sites 0-31,32-63 --cross-site-latency 20 \
  --cross-site-bandwidth 125000 --layers 128

# A side task with 20 ms steps (harvest-aware planning, plan
# --side-task-profile) on the yardstick-like case of the two-site rows
# without the sites: the fastest schedule against the harvest pick.
echo '{"step": 20}' >"$tmp/task20.json"
echo
echo "| side task | p | m | schedule | makespan | side work / step | on the best rank | net gain |"
echo "|---|---|---|---|---|---|---|---|"
side_task_rows() {
  local p=$1 m=$2
  shift 2
  "$PW" plan -p "$p" -m "$m" "$@" --side-task-profile "$tmp/task20.json" --json |
    jq -r --arg p "$p" --arg m "$m" '
      def row($what; $c): "| 20 ms steps | \($p) | \($m) | \($what): \($c.family) | \($c.makespan * 1000 | round / 1000) | \($c.side_work * 1000 | round / 1000) | \($c.side_work_best_rank * 1000 | round / 1000) | \($c.net_gain * 1000 | round / 1000) |";
      row("fastest"; .harvest.fastest),
      row("harvest pick"; .harvest.pick)'
}
side_task_rows 4 8 --cost F=10,I=10,W=10 --layers 16
side_task_rows 8 16 --cost F=10,I=10,W=10 --layers 32
