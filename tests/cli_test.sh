#!/usr/bin/env bash
# End-to-end checks of the `pipewright` command line: what a user types,
# the exit code they get, and the words they read. Registered with ctest.
# Usage: tests/cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: cli_test.sh PATH/TO/pipewright}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect CODE "WORDS" ARGS...: runs pipewright ARGS, checks the exit code and
# that stdout+stderr contains WORDS (a fixed string; empty = don't check).
expect() {
  local want_rc=$1 words=$2
  shift 2
  local out rc
  out=$("$PW" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL: pipewright $* exited $rc, expected $want_rc"; echo "$out" | head -20; failures=$((failures + 1)); return
  fi
  if [ "$rc" -ge 128 ]; then echo "FAIL: pipewright $* crashed (signal $((rc - 128)))"; failures=$((failures + 1)); return; fi
  if [ -n "$words" ] && ! grep -qF -- "$words" <<<"$out"; then
    echo "FAIL: pipewright $*: output lacks '$words'"; echo "$out" | head -20; failures=$((failures + 1))
  fi
}

# --- what works ---
expect 0 "Subcommands:" --help
expect 0 "makespan 33, bubble ratio 27.3%" schedule show -s 1f1b -p 4 -m 8 --cost F=1,B=2
expect 0 "rank 3 |" schedule show -s zb-h1 -p 4 -m 8 --cost F=1,I=1,W=1
expect 0 '"makespan":27.0' schedule sim -s zb-h1 -p 4 -m 8 --cost F=1,I=1,W=1 --json
# The executor's per-action overhead is charged to every action: 8 actions
# (1f1b) and 12 (zb-h1) on one rank, 0.5 each, on top of 12 units of work.
expect 0 '"makespan":16.0' schedule sim -s 1f1b -p 1 -m 4 --cost F=1,B=2 --action-overhead 0.5 --json
expect 0 '"makespan":18.0' schedule sim -s zb-h1 -p 1 -m 4 --cost F=1,I=1,W=1 --action-overhead 0.5 --json
expect 2 "-1 is negative" schedule sim -s 1f1b -p 1 -m 4 --cost F=1,B=2 --action-overhead -1
expect 2 "--time-limit: 0 is not positive" plan -p 2 -m 4 --cost F=1,B=2 --time-limit 0
expect 0 "zb-v" schedule compare -p 4 -m 8 --cost F=1,I=1,W=1
expect 0 "wrote $tmp/t.svg" schedule render -s interleaved-1f1b -p 4 -m 8 --svg "$tmp/t.svg" --trace "$tmp/t.json"
grep -q "<svg" "$tmp/t.svg" || { echo "FAIL: SVG not written"; failures=$((failures + 1)); }
grep -q '"traceEvents"' "$tmp/t.json" || { echo "FAIL: trace not written"; failures=$((failures + 1)); }

# The front end plans without LibTorch (it starts in milliseconds) and hands
# the other commands to pipewright-runtime beside it; alone, it says so.
if ldd "$PW" | grep -q libtorch; then echo "FAIL: $PW links LibTorch"; failures=$((failures + 1)); fi
if [ -x "$(dirname "$PW")/pipewright-runtime" ]; then
  expect 0 "--microbatch-size" train --help
  mkdir "$tmp/alone" && cp "$PW" "$tmp/alone/pipewright"
  out=$("$tmp/alone/pipewright" train --help 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF "pipewright-runtime, the binary with the LibTorch commands" <<<"$out"; then
    echo "FAIL: front end without its runtime binary: exit $rc: $out"; failures=$((failures + 1))
  fi
  "$tmp/alone/pipewright" schedule show -s 1f1b -p 2 -m 2 >/dev/null ||
    { echo "FAIL: the front end alone cannot plan"; failures=$((failures + 1)); }
fi

# A deadlocking schedule: `sim` lets the simulation find it, then shows the
# validator's wait-for cycle.
printf '# pipewright schedule v1\nname dl\nranks 2\nmicrobatches 2\nplacement 0 1\nrank 0: 0F0 0B0 0F1 0B1\nrank 1: 1F1 1F0 1B0 1B1\n' >"$tmp/deadlock.txt"
expect 1 "closing the cycle" schedule sim -s "$tmp/deadlock.txt" --json

# sim --json is one JSON object with the documented fields.
"$PW" schedule sim -s 1f1b -p 2 -m 3 --json >"$tmp/sim.json"
for field in '"makespan"' '"bubble_ratio"' '"ranks"' '"busy"' '"peak_memory"' '"bubbles"' '"rank"'; do
  grep -qF "$field" "$tmp/sim.json" || { echo "FAIL: sim --json lacks $field"; failures=$((failures + 1)); }
done

# Round trips through files: CSV (PyTorch) and text; the imported schedule
# simulates to the same makespan as the generated one.
expect 0 "" schedule export -s zb-h1 -p 3 -m 5 -f csv -o "$tmp/zb.csv"
expect 0 "" schedule export -s zb-h1 -p 3 -m 5 -o "$tmp/zb.txt"
gen=$("$PW" schedule sim -s zb-h1 -p 3 -m 5 --json | grep -o '"makespan":[0-9.]*')
for f in "$tmp/zb.csv" "$tmp/zb.txt"; do
  got=$("$PW" schedule sim -s "$f" --json | grep -o '"makespan":[0-9.]*')
  [ "$gen" = "$got" ] || { echo "FAIL: $f simulates to $got, generated to $gen"; failures=$((failures + 1)); }
done
"$PW" schedule export -s "$tmp/zb.csv" -f csv -o "$tmp/zb2.csv"
cmp -s "$tmp/zb.csv" "$tmp/zb2.csv" || { echo "FAIL: CSV round trip not exact"; failures=$((failures + 1)); }
expect 0 "0REDUCE_GRAD" schedule export -s 1f1b -p 2 -m 2 --insert-comm --grad-sync

# The schedule language: a .pipe file compiles to the same schedule as its
# family's generator (examples/schedules/1f1b.pipe is exact), with the shape
# taken from the file or overridden on the command line.
root=$(cd "$(dirname "$0")/.." && pwd)
expect 0 "valid" schedule show -s "$root/examples/schedules/zb-h1.pipe" -p 4 -m 8
pipe=$("$PW" schedule sim -s "$root/examples/schedules/1f1b.pipe" -p 4 -m 12 --json | grep -o '"makespan":[0-9.]*')
gen=$("$PW" schedule sim -s 1f1b -p 4 -m 12 --json | grep -o '"makespan":[0-9.]*')
[ "$pipe" = "$gen" ] || { echo "FAIL: 1f1b.pipe makespan $pipe, generator $gen"; failures=$((failures + 1)); }
printf 'ranks 2\nmicrobatches 2\nwarmup p - q\n' >"$tmp/bad.pipe"
expect 1 "bad.pipe:3" schedule show -s "$tmp/bad.pipe"

# The planner: beats or matches the best built-in, writes a .pipe program and
# its per-stage costs that simulate to the reported makespan.
expect 0 "best built-in" plan -p 4 -m 8 --cost F=1,I=1,W=1
expect 0 "wrote $tmp/p.pipe" plan -p 4 -m 8 --cost F=1,I=1,W=1 --memory-cap 4 -o "$tmp/p.pipe" --out-costs "$tmp/p.json"
expect 0 "makespan 24.75" schedule sim -s "$tmp/p.pipe" --cost-file "$tmp/p.json"
# The program names its costs (costs p.json): sim without --cost-file uses them.
expect 0 "makespan 24.75" schedule sim -s "$tmp/p.pipe"
expect 0 "train it: pipewright train --schedule $tmp/p.pipe" \
  plan -p 4 -m 8 --cost F=1,I=1,W=1 --memory-cap 4 -o "$tmp/p.pipe" --out-costs "$tmp/p.json"
# Without --out-costs the costs go beside the program.
expect 0 "wrote $tmp/p2.costs.json (the per-stage costs it was planned with; the program's costs line names it" \
  plan -p 4 -m 8 --cost F=1,I=1,W=1 -o "$tmp/p2.pipe"
grep -qx "costs p2.costs.json" "$tmp/p2.pipe" || { echo "FAIL: $tmp/p2.pipe has no costs line"; failures=$((failures + 1)); }
# Split or fused backward, decided on I, W and B: where I + W exceeds B
# the plan says what a split would cost and picks a fused family; where
# they are even, a zero-bubble (split) schedule wins.
expect 0 "split backward costs 1.40x the fused one here; interleaved v=4, fused B chosen" plan -p 4 -m 8 --cost F=1,B=2,I=1.6,W=1.2 --time-limit 2
expect 0 "backward      split (I + W = 1.00x B in these costs)" plan -p 4 -m 8 --cost F=1,B=2,I=1,W=1 --time-limit 2
# Costs that differ from the defaults: sim without --cost-file simulates
# what the line names (the --cost-file result), not the default costs.
"$PW" plan -p 4 -m 8 --cost F=1,I=2,W=0.5 --memory-cap 4 -o "$tmp/q.pipe" >/dev/null
by_line=$("$PW" schedule sim -s "$tmp/q.pipe" --json | jq .makespan)
by_file=$("$PW" schedule sim -s "$tmp/q.pipe" --cost-file "$tmp/q.costs.json" --json | jq .makespan)
by_default=$("$PW" schedule sim -s "$tmp/q.pipe" --cost F=1,B=2 --json | jq .makespan)
[ -n "$by_line" ] && [ "$by_line" = "$by_file" ] && [ "$by_line" != "$by_default" ] ||
  { echo "FAIL: sim of q.pipe: line $by_line, --cost-file $by_file, defaults $by_default"; failures=$((failures + 1)); }
# schedule compare ranks built-in families: a --schedule file's costs line plays no part.
mv "$tmp/q.costs.json" "$tmp/q.moved.json"
expect 0 "zb-h1" schedule compare -s "$tmp/q.pipe" -p 4 -m 8
# A path with a blank: quoted in the costs line and in the suggested command.
expect 0 "train it: pipewright train --schedule '$tmp/my plan.pipe'" plan -p 4 -m 8 --cost F=1,I=1,W=1 -o "$tmp/my plan.pipe"
expect 0 "makespan" schedule sim -s "$tmp/my plan.pipe"
# Costs outside the program's directory are named by their absolute path.
mkdir -p "$tmp/plans" "$tmp/costs"
expect 0 "wrote $tmp/plans/p3.pipe" plan -p 4 -m 8 --cost F=1,I=1,W=1 -o "$tmp/plans/p3.pipe" --out-costs "$tmp/costs/p3.json"
grep -qx "costs $tmp/costs/p3.json" "$tmp/plans/p3.pipe" || { echo "FAIL: p3.pipe does not name $tmp/costs/p3.json"; failures=$((failures + 1)); }
expect 1 "is the -o file" plan -p 4 -m 8 --cost F=1,I=1,W=1 -o "$tmp/p4.pipe" --out-costs "$tmp/p4.pipe"
expect 1 "would overwrite --cost-file $tmp/p.json" plan -p 4 -m 8 --cost-file "$tmp/p.json" -o "$tmp/p.pipe" --out-costs "$tmp/p.json"
expect 1 "-o $tmp/none/p5.pipe: no directory $tmp/none" plan -p 4 -m 8 -o "$tmp/none/p5.pipe"
[ ! -e "$tmp/none" ] || { echo "FAIL: plan created $tmp/none"; failures=$((failures + 1)); }
# Another shape than the planned one: the costs line's hint says what to do.
expect 1 "gives the costs of the shape the program was planned for" schedule sim -s "$tmp/p.pipe" -p 2
# Given costs of the wrong shape are the user's file, not the line: no line hint.
out=$("$PW" schedule sim -s "$tmp/p.pipe" -p 2 --cost-file "$tmp/p.json" 2>&1)
grep -q "compile costs" <<<"$out" && ! grep -q "gives the costs of the shape" <<<"$out" ||
  { echo "FAIL: wrong-shape --cost-file: $out"; failures=$((failures + 1)); }
expect 1 "no schedule fits the memory cap" plan -p 4 -m 8 --memory-cap 0.5
# --as-trained simulates the program `train` runs (sends, receives, gradient
# sync, OPT at the cost file's prices): its makespan is the plan's
# training_step, above the compute-only makespan by at least OPT's cost.
echo '{"stages": [{"F": 1, "I": 1, "W": 1}], "comm_latency": 0.125,
       "kind_costs": {"OPT": 5, "SEND_F": 0.25, "RECV_B": 0.5}}' >"$tmp/k.json"
"$PW" plan -p 4 -m 8 --cost-file "$tmp/k.json" -o "$tmp/k.pipe" --out-costs "$tmp/kc.json" --json >"$tmp/k.plan.json"
trained=$("$PW" schedule sim -s "$tmp/k.pipe" --cost-file "$tmp/kc.json" --as-trained --json | jq .makespan)
compute=$("$PW" schedule sim -s "$tmp/k.pipe" --cost-file "$tmp/kc.json" --json | jq .makespan)
jq -e --argjson t "${trained:-0}" --argjson c "${compute:-0}" \
  '.best.training_step == $t and .best.makespan == $c and $t >= $c + 5' "$tmp/k.plan.json" >/dev/null ||
  { echo "FAIL: sim --as-trained $trained / $compute vs plan's $(jq -c '[.best.training_step, .best.makespan]' "$tmp/k.plan.json")"
    failures=$((failures + 1)); }
# A schedule exported already lowered is lowered afresh, to the same program.
"$PW" schedule export -s zb-h1 -p 4 -m 8 --insert-comm --grad-sync -o "$tmp/zb-lowered.txt" >/dev/null
zb=$("$PW" schedule sim -s zb-h1 -p 4 -m 8 --cost-file "$tmp/k.json" --as-trained --json | jq .makespan)
expect 0 "\"makespan\":$zb," schedule sim -s "$tmp/zb-lowered.txt" --cost-file "$tmp/k.json" --as-trained --json
# Clusters: the bundled two-site file (20 ms between sites: 1F1B on p = 8,
# m = 1, F=1,B=2 pays it once each way: 8 + 16 + 40), flags over it, bad input.
expect 0 "makespan 64, bubble" schedule sim -s 1f1b -p 8 -m 1 --cost F=1,B=2 --cluster "$root/examples/clusters/two-sites.json"
expect 0 "cluster: sites 0-3 | 4-7, cross-site 20" schedule sim -s 1f1b -p 8 -m 1 --cluster "$root/examples/clusters/two-sites.json"
expect 0 "rank 3 at speed 0.5" schedule sim -s 1f1b -p 4 -m 4 --rank-speed 1,1,1,0.5
expect 0 "over ranks 0,2,1,3" plan -p 4 -m 16 --cost F=10,I=10,W=10 --layers 16 --output-bytes 4MB --sites 0+2,1+3 \
  --cross-site-latency 20 --cross-site-bandwidth 125000
expect 1 "the sites name 7 ranks but the schedule has 8" schedule sim -s 1f1b -p 8 -m 8 --sites 0-3,4-6
expect 1 "names rank 3 twice" schedule sim -s 1f1b -p 8 -m 8 --sites 0-3,3-7
expect 1 "need sites" schedule sim -s 1f1b -p 8 -m 8 --cross-site-latency 3
# Harvest-aware planning: a task whose step is one forward (the fastest
# schedule's bubbles are shorter); a profile without its step is refused.
# Counting every whole step that fits (margin 1) the pick is slower but
# holds steps; at the runtime's margin (1.2, the default) bubbles of one
# step hold none, and the fastest schedule is the pick.
echo '{"step": 1, "margin": 1}' >"$tmp/task.json"
expect 0 "27.000  (9.1% slower than the best)" plan -p 4 -m 8 --cost F=1,I=1,W=1 --side-task-profile "$tmp/task.json"
expect 0 "wrote $tmp/h.pipe (the harvest pick" plan -p 4 -m 8 --cost F=1,I=1,W=1 --side-task-profile "$tmp/task.json" -o "$tmp/h.pipe"
echo '{"step": 1}' >"$tmp/task-margin.json"
expect 0 "24.750  (0.0% slower than the best)" plan -p 4 -m 8 --cost F=1,I=1,W=1 --side-task-profile "$tmp/task-margin.json"
echo '{"memory_bytes": 5}' >"$tmp/bad-task.json"
expect 1 "\"step\" is missing" plan -p 4 -m 8 --side-task-profile "$tmp/bad-task.json"
expect 0 '"saving_vs_best_builtin"' plan -p 4 -m 8 --cost F=1,I=1,W=1 --json

# Training (only in builds with the LibTorch runtime): local ranks start,
# train, report; bad settings fail before any rank starts.
if "$PW" --help | grep -q '^  train'; then
  expect 0 "summary: 3 steps" train --config "$root/examples/tiny.toml" --pp 2 --schedule 1f1b --steps 3
  # After three steps the bubbles are re-predicted from their measured costs,
  # overheads and link included; the profile carries the same overheads.
  expect 0 "from measured costs" train --config "$root/examples/tiny.toml" --pp 2 --schedule zb-h1 --steps 5 \
    --metrics-out "$tmp/bubbles.jsonl" --profile-out "$tmp/bubbles.profile.json"
  head -1 "$tmp/bubbles.jsonl" | grep -q '"bubble_ratio_predicted_from":"estimate"' &&
    tail -1 "$tmp/bubbles.jsonl" | grep -q '"bubble_ratio_predicted_from":"measured"' ||
    { echo "FAIL: --metrics-out does not say where the bubble prediction came from"; failures=$((failures + 1)); }
  for kind in SEND_F SEND_B RECV_F RECV_B OPT; do
    grep -q "\"$kind\"" "$tmp/bubbles.profile.json" ||
      { echo "FAIL: --profile-out lacks the measured $kind overhead"; failures=$((failures + 1)); }
  done
  expect 1 "d_modle" train --config "$root/examples/tiny.toml" --pp 2 --steps 1 --set model.d_modle=64
  expect 1 "" train --config "$root/examples/tiny.toml" --pp 2 --steps 1 --data /nonexistent/corpus.txt
  expect 0 "schedule auto: " train --config "$root/examples/tiny.toml" --pp 2 --schedule auto --steps 2 --loss-curve "$tmp/loss.svg"
  grep -q "<polyline" "$tmp/loss.svg" || { echo "FAIL: loss curve not drawn"; failures=$((failures + 1)); }
  # auto decides from costs measured before the ranks start, and the split it
  # chose is what the ranks train with.
  out=$("$PW" train --config "$root/examples/tiny.toml" --pp 2 --schedule auto --layers-per-stage auto --steps 1 \
    --checkpoint-dir "$tmp/ck_auto" 2>&1)
  rc=$?
  for words in "schedule auto: measured costs (block F" "s/step (blocks per stage" "blocks per stage: " "summary: 1 step"; do
    [ "$rc" -eq 0 ] && grep -qF -- "$words" <<<"$out" ||
      { echo "FAIL: train --schedule auto --layers-per-stage auto (rc $rc) lacks '$words'"; echo "$out" | head -20; failures=$((failures + 1)); break; }
  done
  # The manifest keeps the request (auto) and the plan that ran apart.
  jq -e '.request.schedule == "auto" and .request.layers_per_stage == "auto" and .plan.schedule != "auto"
         and (.plan.why | startswith("schedule auto: measured costs")) and .plan.schedule == .job.schedule
         and .plan.layers_per_stage == .job.layers_per_stage and .plan.pp == 2' \
    "$tmp/ck_auto/manifest.json" >/dev/null ||
    { echo "FAIL: the manifest does not record the request and the plan apart"; jq '{request, plan}' "$tmp/ck_auto/manifest.json" | head -40; failures=$((failures + 1)); }
  expect 0 "layers per stage auto: measured costs" train --config "$root/examples/tiny.toml" --pp 2 --schedule 1f1b \
    --layers-per-stage auto --steps 1
  expect 1 "did you mean 'steps'" train --config "$root/examples/tiny.toml" --set train.stepz=3
  expect 0 "summary: 2 steps" train --config "$root/examples/tiny.toml" --pp 2 --set train.steps=2 --set train.lr=0.001
  expect 2 "--dp" train --config "$root/examples/tiny.toml" --pp 2 --dp 0 --steps 1
  expect 1 "virtual stages" train --config "$root/examples/tiny.toml" --pp 20 --steps 1
fi

# Under a launcher its world decides: a different --ranks fails before any rendezvous.
out=$(RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 \
      "$PW" infer --prompts "$root/examples/prompts.jsonl" --out "$tmp/x.jsonl" --ranks 4 2>&1)
rc=$?
{ [ "$rc" -eq 1 ] && grep -qF -- "--ranks 4 but torchrun started 2 ranks" <<<"$out"; } ||
  { echo "FAIL: infer --ranks 4 under a 2-rank torchrun world (rc $rc): $out" | head -5; failures=$((failures + 1)); }

# --- side tasks alone, and in a training run's bubbles ---
if "$PW" --help | grep -q '^  side-task'; then
  expect 0 "pagerank" side-task list
  expect 0 '"unit":"edges"' side-task run pagerank:scale=8 --seconds 0.2 --json
  expect 1 "did you mean 'pagerank'" side-task run pagrank --seconds 0.1
  expect 1 "bad placement '@rank=x'" train --config "$root/examples/tiny.toml" --pp 2 --steps 1 --side-task-cmd "true@rank=x"
  expect 1 "did you mean 'image'" train --config "$root/examples/tiny.toml" --pp 2 --steps 1 --side-task imagee
  expect 0 "harvest rank 1 (gated" train --config "$root/examples/tiny.toml" --pp 2 --steps 5 \
    --side-task image@rank=1 --metrics-out "$tmp/harvest.jsonl"
  grep -q '"observers"' "$tmp/harvest.jsonl" || { echo "FAIL: --metrics-out lacks the harvest report"; failures=$((failures + 1)); }
fi

# --- bad input: a clear message and a non-zero exit, never a crash ---
expect 2 "unknown command 'bogus'" bogus
expect 2 "" schedule show --no-such-flag
expect 2 "--ranks" schedule show -p 0
expect 1 "unknown schedule 'nope'" schedule show -s nope
expect 1 "multiple of the number of ranks" schedule show -s interleaved-1f1b -p 4 -m 6
expect 1 "two stages per rank" schedule show -s zb-v --chunks 3
expect 1 "--cost" schedule sim --cost F=oops
expect 1 "is not a size" schedule sim --memory-cap 12parsecs
expect 1 "nothing to render" schedule render
expect 1 "does not exist" schedule render --svg /nonexistent-dir/x.svg
expect 1 "contradicts" schedule sim -s "$tmp/zb.txt" --ranks 7
printf 'rank 0 garbage\n' >"$tmp/bad.txt"
expect 1 "bad.txt:1" schedule show -s "$tmp/bad.txt"
printf '0F0,0B0\n1F0\n' >"$tmp/missing.csv"
expect 1 "missing 1B0" schedule show -s "$tmp/missing.csv"
printf '0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n' >"$tmp/cycle.csv"
expect 1 "no rank can make progress" schedule show -s "$tmp/cycle.csv"
printf '{"stages": [{"F": -1}]}' >"$tmp/costs.json"
expect 1 "stages[0].F" schedule sim --cost-file "$tmp/costs.json"

if [ "$failures" -ne 0 ]; then
  echo "$failures CLI check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
