#!/usr/bin/env bash
# Activation recomputation, planned and measured: does `train` get the
# memory and the time that `plan` predicted?
#
#   1. profile the yardstick (examples/small.toml, pp=2, 8 microbatches,
#      PROFILE_STEPS steps):
#      train --profile-out (measured times; the model's memory estimates);
#   2. plan twice from that profile: without a cap, and under a cap with
#      room for about one microbatch of activations per rank besides the
#      static memory, which no schedule meets without recomputing;
#   3. train each plan REPEATS times (default 3), interleaved, one thread
#      per rank, and take the median step time (steps after the first) and
#      the largest peak of allocated tensor bytes over the ranks.
#
# Prints one markdown row per plan: its schedule, the plan's training step
# (`plan`'s training_step: the schedule lowered as train runs it, with the
# profile's measured sends, receives and optimizer step) and peak, the
# measured step and peak, and measured / planned for each; then the
# recomputation's cost and saving, planned against measured. The
# "unplanned ms" column is the measured step minus the planned one: what
# the plan still leaves out.
#
# The two plans differ in more than recomputation (placement, split,
# order), so their difference is not what recomputing costs. The last
# table isolates it: the recomputing plan in the order it was planned in
# (`schedule export` of the .pipe, compiled with the costs its `costs` line
# names, as `train` compiles it), planned with and without its DROP and RECOMPUTE
# actions (`schedule sim --as-trained` under the plan's per-stage costs),
# and measured in one run with `train --recompute-paired 1`, which skips
# them in one step of every pair of adjacent steps: the step time's paired
# difference (95 % interval) and each phase's peak. Separate runs of the
# two variants differ by more than the effect on a shared machine. A trace
# of that run gives the mean time of each computing action in both phases.
#
# That run also writes a profile (`--profile-out`), which measures what
# recomputation costs on each stage: the RECOMPUTE, and the backward of a
# recomputed microbatch apart from the others (docs/cost-model.md,
# "Recomputation's own times"). The last table predicts the time cost
# from that profile — with those times, and without them (F, I, W only) —
# and measures it in a second paired run, so no figure is predicted from
# the run that measures it.
#
# Usage: bench/recompute_bench.sh [PATH/TO/pipewright]
# Environment: REPEATS (3), STEPS (8), PAIRED_STEPS (41: 19 counted pairs),
# PROFILE_STEPS (12), CAP_STAGES (1.1), TIGHT_CAP_STAGES (1.02).
set -euo pipefail
PW=${1:-build/src/cli/pipewright}
[ -x "$PW" ] || { echo "no pipewright binary at $PW; build first (scripts/build.sh)" >&2; exit 1; }
command -v jq >/dev/null || { echo "recompute_bench.sh needs jq (scripts/install-deps.sh installs it)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
repeats=${REPEATS:-3}
steps=${STEPS:-8}
paired_steps=${PAIRED_STEPS:-41}
# A longer profile averages more of the host's drift into the plan's costs.
profile_steps=${PROFILE_STEPS:-12}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train=(train --config "$root/examples/small.toml" --pp 2 --microbatches 8 --eval-batches 0)

echo "profiling the yardstick (pp=2, 8 microbatches, $profile_steps steps)..." >&2
"$PW" "${train[@]}" --steps "$profile_steps" --profile-out "$tmp/prof.json" >"$tmp/profile.log" 2>&1 ||
  { tail -5 "$tmp/profile.log" >&2; exit 1; }
# Room for the static bytes and CAP_STAGES (1.1) stages' activations: one
# microbatch. Some profiles let an interleaved order fit that without
# recomputing; a smaller CAP_STAGES (0.9) then forces recomputation.
cap_stages=${CAP_STAGES:-1.1}
cap=$(jq --argjson k "$cap_stages" '(.static_bytes | max) + $k * ([.stages[].activation_bytes] | max) | floor' \
  "$tmp/prof.json")

# plan NAME [ARGS]: writes $tmp/NAME.pipe and records makespan and peak.
declare -A planned_ms planned_peak schedule_of
plan() {
  local name=$1
  shift
  "$PW" plan -p 2 -m 8 --cost-file "$tmp/prof.json" "$@" -o "$tmp/$name.pipe" --json >"$tmp/$name.plan.json" || return 1
  planned_ms[$name]=$(jq 'if .best.training_step > 0 then .best.training_step else .best.makespan end' "$tmp/$name.plan.json")
  planned_peak[$name]=$(jq '.best.peak_memory' "$tmp/$name.plan.json")
  schedule_of[$name]=$(jq -r '.best.family' "$tmp/$name.plan.json")
}
# Each .pipe names the costs it was planned with (NAME.costs.json beside
# it), so train and schedule export compile the order the plan evaluated.
plan plain
plan recompute --memory-cap "$cap"

declare -A step_runs peak_runs
for ((r = 1; r <= repeats; r++)); do
  for name in plain recompute; do
    echo "run $r/$repeats: $name" >&2
    "$PW" "${train[@]}" --steps "$steps" --schedule "$tmp/$name.pipe" --metrics-out "$tmp/$name.$r.jsonl" \
      >"$tmp/$name.$r.log" 2>&1 || { tail -5 "$tmp/$name.$r.log" >&2; exit 1; }
    # Median step (ms) after the first, from tokens/s and the tokens of a
    # step (the banner: "8 microbatches of B"; seq_len 128); the largest
    # rank peak (bytes).
    mb_size=$(sed -n 's/.* 8 microbatches of \([0-9]*\),.*/\1/p' "$tmp/$name.$r.log" | head -1)
    [ -n "$mb_size" ] || { echo "no microbatch size in $name's banner" >&2; exit 1; }
    step_runs[$name]+="$(jq -s --argjson tokens $((8 * mb_size * 128)) '[.[] | select(.step != null and .step > 0) | $tokens / .tokens_per_s * 1000]
      | sort | .[length / 2 | floor]' "$tmp/$name.$r.jsonl") "
    peak_runs[$name]+="$(jq -s '[.[] | select(.step != null) | .peak_allocated_bytes | max] | max' \
      "$tmp/$name.$r.jsonl") "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

echo "cap for the recomputing plan: $(mib "$cap") per rank (static + $cap_stages stages of activations)"
echo
echo "| plan | schedule | planned step ms | measured step ms | measured / planned | unplanned ms | planned peak | measured peak | measured / planned |"
echo "|---|---|---|---|---|---|---|---|---|"
declare -A step_med peak_med
for name in plain recompute; do
  step_med[$name]=$(median <<<"${step_runs[$name]}")
  peak_med[$name]=$(median <<<"${peak_runs[$name]}")
  awk -v n="$name" -v s="${schedule_of[$name]}" -v pm="${planned_ms[$name]}" -v mm="${step_med[$name]}" \
      -v pp="${planned_peak[$name]}" -v mp="${peak_med[$name]}" 'BEGIN {
    printf "| %s | %s | %.0f | %.0f | %.2f | %.0f | %.1f MiB | %.1f MiB | %.2f |\n", n, s, pm, mm, mm / pm, mm - pm,
           pp / 1048576, mp / 1048576, mp / pp }'
done
echo
awk -v pm0="${planned_ms[plain]}" -v pm1="${planned_ms[recompute]}" -v mm0="${step_med[plain]}" \
    -v mm1="${step_med[recompute]}" -v pp0="${planned_peak[plain]}" -v pp1="${planned_peak[recompute]}" \
    -v mp0="${peak_med[plain]}" -v mp1="${peak_med[recompute]}" 'BEGIN {
  printf "recomputation: time planned %+.0f ms, measured %+.0f ms; peak planned %+.1f MiB, measured %+.1f MiB\n",
         pm1 - pm0, mm1 - mm0, (pp1 - pp0) / 1048576, (mp1 - mp0) / 1048576 }'

# Recomputation alone, on one order (see the header). Where the plan under
# the cap fits it without recomputing (an interleaved order can), a plan
# under a tighter cap, static + TIGHT_CAP_STAGES (1.02) stages, which holds
# less than a stage's activations besides one microbatch in flight, gives
# the recomputing order.
rc=recompute
if ! grep -q '^kind RECOMPUTE' "$tmp/recompute.pipe"; then
  tight_stages=${TIGHT_CAP_STAGES:-1.02}
  tight=$(jq --argjson k "$tight_stages" '(.static_bytes | max) + $k * ([.stages[].activation_bytes] | max) | floor' \
    "$tmp/prof.json")
  echo
  echo "the plan under the cap does not recompute (${schedule_of[recompute]} fits it without); recomputation" \
    "alone is measured on a plan under $(mib "$tight") (static + $tight_stages stages of activations)"
  if ! plan tight --memory-cap "$tight" 2>"$tmp/tight.err" || ! grep -q '^kind RECOMPUTE' "$tmp/tight.pipe"; then
    echo "recomputation alone: not measured: no plan under that cap recomputes ($(tail -1 "$tmp/tight.err"))"
    exit 0
  fi
  rc=tight
fi
echo
echo "recomputing plan: ${schedule_of[$rc]}"
"$PW" schedule export -s "$tmp/$rc.pipe" -o "$tmp/with.txt" 2>/dev/null
grep -v '^kind ' "$tmp/with.txt" | sed -E 's/ [0-9]+(DROP|RECOMPUTE)[0-9]+//g' >"$tmp/without.txt"
! grep -qE 'DROP|RECOMPUTE' "$tmp/without.txt" || { echo "could not strip DROP and RECOMPUTE" >&2; exit 1; }
declare -A sim_ms sim_peak
for v in with without; do
  "$PW" schedule sim -s "$tmp/$v.txt" --cost-file "$tmp/$rc.costs.json" --as-trained --json >"$tmp/$v.sim.json"
  sim_ms[$v]=$(jq .makespan "$tmp/$v.sim.json")
  sim_peak[$v]=$(jq '[.ranks[].peak_memory] | max' "$tmp/$v.sim.json")
done
layers=$(jq -r '.best.layers_per_stage | map(tostring) | join(",")' "$tmp/$rc.plan.json")
echo "paired run: $paired_steps steps, DROP and RECOMPUTE skipped in one step of each pair" >&2
"$PW" "${train[@]}" --steps "$paired_steps" --schedule "$tmp/with.txt" --layers-per-stage "$layers" \
  --recompute-paired 1 --metrics-out "$tmp/paired.jsonl" --trace "$tmp/paired.trace.json" \
  --profile-out "$tmp/paired.prof.json" >"$tmp/paired.log" 2>&1 ||
  { tail -5 "$tmp/paired.log" >&2; exit 1; }
jq -s -e 'map(select(.recompute_paired != null)) | length == 1' "$tmp/paired.jsonl" >/dev/null ||
  { echo "no recompute_paired line in the paired run's metrics" >&2; exit 1; }
echo
echo "recomputation alone (the recomputing plan's order, with and without DROP and RECOMPUTE):"
echo
echo "| | planned | measured (paired, 95 % interval) | measured / planned |"
echo "|---|---|---|---|"
jq -s -r --argjson pw "${sim_ms[with]}" --argjson po "${sim_ms[without]}" --argjson mw "${sim_peak[with]}" \
    --argjson mo "${sim_peak[without]}" '
  (map(select(.recompute_paired != null))[0].recompute_paired) as $m
  | ($m.step_ms_with - $m.step_ms_without) as $cost
  | (($m.peak_bytes_without | max) - ($m.peak_bytes_with | max)) as $drop
  | def f(x): x * 10 | round / 10;
  def r(x): x * 100 | round / 100;
  "| step without | \(f($po)) ms | \(f($m.step_ms_without)) ms | \(r($m.step_ms_without / $po)) |",
  "| step with | \(f($pw)) ms | \(f($m.step_ms_with)) ms | \(r($m.step_ms_with / $pw)) |",
  "| time cost | +\(f($pw - $po)) ms (+\(f(($pw / $po - 1) * 100)) %) | +\(f($cost)) ms (+\(f($m.cost * 100)) % [\(f($m.ci95_low * 100)), \(f($m.ci95_high * 100))], \($m.pairs) pairs) | \(r($cost / ($pw - $po))) |",
  "| peak drop | \(f(($mo - $mw) / 1048576)) MiB | \(f($drop / 1048576)) MiB | \(r($drop / ($mo - $mw))) |"
' "$tmp/paired.jsonl"

# Where the cost goes: the mean time of each computing action in the
# paired run's counted steps, with DROP and RECOMPUTE and without (the
# cost model charges F, I, W alike in both and RECOMPUTE as F).
echo
echo "actions in the paired run (mean ms per action; counted steps, every rank):"
echo
echo "| action | with DROP and RECOMPUTE | without | with / without |"
echo "|---|---|---|---|"
jq -r --slurpfile m "$tmp/paired.jsonl" '
  ($m | map(select(.recompute_paired != null))[0].recompute_paired.first_step) as $from
  | ($m | map(select(.step != null and .step >= $from)) | map({key: (.step | tostring), value: .recompute_held})
     | from_entries) as $held
  | [.traceEvents[] | select(.ph == "X" and .args.step != null and $held[.args.step | tostring] != null
                             and (.cat | test("^(F|B|I|W|RECOMPUTE)$")))]
  | group_by(.cat)[]
  | (map(select($held[.args.step | tostring] | not) | .dur)) as $with
  | (map(select($held[.args.step | tostring]) | .dur)) as $without
  | def mean(a): if (a | length) > 0 then (a | add) / (a | length) / 1000 else null end;
    def ms(x): if x == null then "-" else (x * 100 | round / 100 | tostring) end;
    "| \(.[0].cat) | \(ms(mean($with))) | \(ms(mean($without))) | \(if mean($with) != null and mean($without) != null then (mean($with) / mean($without) * 100 | round / 100 | tostring) else "-" end) |"
' "$tmp/paired.trace.json"

# Recomputation's cost predicted from the paired run's profile, measured
# in a second paired run (see the header).
jq -e '[.stages[] | select(.RECOMPUTE != null)] | length > 0' "$tmp/paired.prof.json" >/dev/null ||
  { echo "the paired run's profile has no RECOMPUTE times" >&2; exit 1; }
jq 'del(.stages[].RECOMPUTE, .stages[].B_after_recompute, .stages[].I_after_recompute, .stages[].W_after_recompute)
    | del(.layers[]?.RECOMPUTE, .layers[]?.B_after_recompute, .layers[]?.I_after_recompute,
          .layers[]?.W_after_recompute)' "$tmp/paired.prof.json" >"$tmp/paired.plain.prof.json"
declare -A cost_from
for prof in paired.prof paired.plain.prof; do
  for v in with without; do
    "$PW" schedule sim -s "$tmp/$v.txt" --cost-file "$tmp/$prof.json" --as-trained --json >"$tmp/$v.$prof.sim.json"
  done
  cost_from[$prof]=$(jq -n --slurpfile w "$tmp/with.$prof.sim.json" --slurpfile o "$tmp/without.$prof.sim.json" \
    '$w[0].makespan - $o[0].makespan')
done
echo "second paired run: $paired_steps steps" >&2
"$PW" "${train[@]}" --steps "$paired_steps" --schedule "$tmp/with.txt" --layers-per-stage "$layers" \
  --recompute-paired 1 --metrics-out "$tmp/paired2.jsonl" >"$tmp/paired2.log" 2>&1 ||
  { tail -5 "$tmp/paired2.log" >&2; exit 1; }
echo
echo "time cost predicted from the first paired run's profile, measured in a second paired run:"
echo
echo "| predicted from | predicted time cost | measured (second paired run, 95 % interval) | measured / predicted |"
echo "|---|---|---|---|"
jq -s -r --argjson plan "$(jq -n --slurpfile w "$tmp/with.sim.json" --slurpfile o "$tmp/without.sim.json" \
        '$w[0].makespan - $o[0].makespan')" \
    --argjson plain "${cost_from[paired.plain.prof]}" --argjson own "${cost_from[paired.prof]}" '
  (map(select(.recompute_paired != null))[0].recompute_paired) as $m
  | ($m.step_ms_with - $m.step_ms_without) as $cost
  | def f(x): x * 10 | round / 10;
  def r(x): x * 100 | round / 100;
  def row(name; p): "| \(name) | +\(f(p)) ms | +\(f($cost)) ms (+\(f($m.cost * 100)) % [\(f($m.ci95_low * 100)), \(f($m.ci95_high * 100))]) | \(r($cost / p)) |";
  row("the plan'"'"'s costs (RECOMPUTE = F)"; $plan),
  row("the paired profile, F, I, W only (RECOMPUTE = F)"; $plain),
  row("the paired profile with RECOMPUTE and the after-recompute backward"; $own)
' "$tmp/paired2.jsonl"
