#!/usr/bin/env bash
# End-to-end checks of `pipewright infer` on local ranks: greedy outputs agree
# across replicate, WaS, CaS, shared and auto (2 ranks) and with an fp16 KV cache,
# with the shared prompt queue
# and round-robin shares, and with one process; a bad
# prompt line is reported with its line number and the rest is processed; a
# budget too small fails up front with the minimum; an interrupted job
# (results cut short, with a torn last line) resumes to exactly the full set.
# Registered with ctest. Usage: tests/infer_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: infer_cli_test.sh PATH/TO/pipewright}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The tiny model (examples/tiny.toml defaults), random init: outputs are noise
# but deterministic, which is all agreement needs.
# --kv-cache budget: the KV cache takes all the budget leaves, so that
# capacities compare across modes and KV types (by default it holds only
# what these few prompts can use; checked below).
common=(--memory-budget 16MiB --kv-cache budget --max-tokens 12 --max-batch-tokens 64 --timeout 240)

# 12 lines: line 5 is malformed, line 9 asks for 3 tokens, ids mix strings
# and numbers, prompts have different lengths (so batches mix prefill/decode).
prompts=$tmp/prompts.jsonl
{
  echo '{"id": "a", "prompt": "The quick brown fox"}'
  echo '{"id": "b", "prompt": "Permission is hereby granted, free of charge,"}'
  echo '{"id": 3, "prompt": "x"}'
  echo '{"prompt": "id defaults to the line number"}'
  echo '{"id": "bad", "prompt": "unterminated}'
  echo '{"id": "f", "prompt": "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY"}'
  echo '{"id": "g", "prompt": "0123456789"}'
  echo '{"id": "h", "prompt": "GNU GENERAL PUBLIC LICENSE"}'
  echo '{"id": "i", "prompt": "short max", "max_tokens": 3}'
  echo '{"id": "j", "prompt": "Redistribution and use in source and binary forms"}'
  echo '{"id": "k", "prompt": "zz"}'
  echo '{"id": "l", "prompt": "the end"}'
} >"$prompts"
valid=11

# id + generated tokens of every result, sorted by id: the comparable part.
outputs() { sed -E 's/.*"id":"([^"]*)".*"tokens":(\[[0-9,]*\])\}$/\1 \2/' "$1" | sort; }

run() {  # run NAME ARGS...: infer into $tmp/NAME.jsonl, log in $tmp/NAME.log
  local name=$1
  shift
  "$PW" infer --prompts "$prompts" --out "$tmp/$name.jsonl" "${common[@]}" "$@" >"$tmp/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "infer $name exited $rc"; tail -20 "$tmp/$name.log"; fi
  return $rc
}

# --- one process, replicate: the reference ---
run single --ranks 1 --mode replicate
[ "$(wc -l <"$tmp/single.jsonl")" -eq $valid ] || fail "single: $(wc -l <"$tmp/single.jsonl") results, expected $valid"
grep -qF "prompts.jsonl:5:" "$tmp/single.log" || { fail "bad line 5 not reported"; head -5 "$tmp/single.log"; }
grep -qF '"id":"4"' "$tmp/single.jsonl" || fail "a prompt without id did not get its line number (4)"
grep -qF '"id":"bad"' "$tmp/single.jsonl" && fail "the malformed line produced a result"
i_tokens=$(grep -F '"id":"i"' "$tmp/single.jsonl" | sed -E 's/.*"tokens":\[([0-9,]*)\].*/\1/' | tr ',' '\n' | grep -c .)
[ "$i_tokens" -le 3 ] || fail "line max_tokens 3 ignored: $i_tokens tokens"
outputs "$tmp/single.jsonl" >"$tmp/single.out"

# --- 2 ranks in every mode: token-for-token the same ---
# Auto on local ranks shares the weights in memory (mode shared);
# --network-pool keeps it on WaS/CaS.
for mode in replicate was cas shared auto auto-net; do
  flags=(--mode "${mode%-net}")
  [ "$mode" = auto-net ] && flags+=(--network-pool)
  run "$mode" --ranks 2 "${flags[@]}" --summary-json "$tmp/$mode.summary.json" || continue
  outputs "$tmp/$mode.jsonl" >"$tmp/$mode.out"
  if ! cmp -s "$tmp/single.out" "$tmp/$mode.out"; then
    fail "mode $mode (2 ranks) differs from one process:"; diff "$tmp/single.out" "$tmp/$mode.out" | head -6
  fi
  [ "$(cut -d' ' -f1 "$tmp/$mode.out" | uniq -d | wc -l)" -eq 0 ] || fail "mode $mode: duplicate ids"
  # Both ranks report, their counts add up to every result, and each served
  # prompts: the shared queue's first chunk of every rank is its own (chunk
  # r for rank r), so a rank that starts late still finds work.
  jq -e --argjson n $valid '(.rank_summaries | length) == 2 and ([.rank_summaries[].finished] | add) == $n' \
    "$tmp/$mode.summary.json" >/dev/null || fail "mode $mode: the ranks' finished counts do not add up to $valid"
  jq -e 'all(.rank_summaries[]; .finished > 0)' "$tmp/$mode.summary.json" >/dev/null ||
    fail "mode $mode (queue): a rank served no prompt"
  jq -e '.accounting_exact == true and all(.rank_summaries[]; .accounting_exact == true)' \
    "$tmp/$mode.summary.json" >/dev/null || fail "mode $mode: memory accounting not exact"
  ran=$mode
  [ "$mode" = auto ] && ran=shared
  [ "$mode" = auto-net ] && ran=auto
  grep -qF "summary: mode $ran" "$tmp/$mode.log" || fail "mode $mode: no job summary line of mode $ran"
done
# The defaults: --memory-budget auto (80 % of what the host has, over the
# ranks) and a KV cache of what the prompts can use, far below that budget;
# the same tokens as the runs above.
if "$PW" infer --prompts "$prompts" --out "$tmp/defaults.jsonl" --ranks 2 --max-tokens 12 \
     --summary-json "$tmp/defaults.summary.json" >"$tmp/defaults.log" 2>&1; then
  grep -qF "memory budget auto: 80 % of the" "$tmp/defaults.log" || fail "--memory-budget auto: no header line"
  jq -e 'all(.rank_summaries[]; .plan.budget < .plan.budget_cap and .plan.budget_cap > 64 * 1048576)' \
    "$tmp/defaults.summary.json" >/dev/null || fail "defaults: the KV cache is not capped at what the prompts use"
  outputs "$tmp/defaults.jsonl" >"$tmp/defaults.out"
  cmp -s "$tmp/single.out" "$tmp/defaults.out" || fail "the defaults give other tokens than the runs above"
else
  fail "infer with the defaults exited non-zero"; tail -5 "$tmp/defaults.log"
fi

# --weights-layout: the default (batch invariant) holds the blocks and the
# head in panels in every mode, WaS's fetched blocks included, and every rank
# and the summary say so with the kernel level; plain and prepacked (oneDNN,
# AVX-512 CPUs) give the same greedy tokens with --batch-invariant off, and
# are refused with it on (their kernels' order follows the batch's shape).
facts=$("$PW" kernels --json)  # this process's kernel level and whether oneDNN packs here
level=$(jq -r .kernel_level <<<"$facts")
for mode in replicate was cas shared auto-net; do
  jq -e --arg level "$level" 'all(.rank_summaries[]; .weights_layout == "panels" and .kernel_level == $level)
        and .weights_layout == "panels"' "$tmp/$mode.summary.json" >/dev/null ||
    fail "mode $mode: weights not in panels at kernel level $level: $(jq -c '[.weights_layout, .kernel_level]' "$tmp/$mode.summary.json")"
  grep -qF "weights panels fp32, kernels $level" "$tmp/$mode.log" || fail "mode $mode: the summary does not name layout and level"
done
layouts=(plain)
[ "$(jq .onednn_prepacked <<<"$facts")" = true ] && layouts+=(prepacked)
for layout in "${layouts[@]}"; do
  if run "$layout" --ranks 2 --mode was --weights-layout "$layout" --batch-invariant off \
       --summary-json "$tmp/$layout.summary.json"; then
    outputs "$tmp/$layout.jsonl" >"$tmp/$layout.out"
    cmp -s "$tmp/single.out" "$tmp/$layout.out" ||
      { fail "--weights-layout $layout differs from the default"; diff "$tmp/single.out" "$tmp/$layout.out" | head -6; }
    jq -e --arg l "$layout" 'all(.rank_summaries[]; .weights_layout == $l)' "$tmp/$layout.summary.json" >/dev/null ||
      fail "--weights-layout $layout: a rank reports another layout"
  fi
  out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --weights-layout "$layout" 2>&1)
  [ $? -ne 0 ] && grep -qF -- "--batch-invariant off" <<<"$out" && [ ! -s "$tmp/x.jsonl" ] ||
    fail "--weights-layout $layout with batch invariance on is not refused with its remedy: $out"
done
# --weights bf16 and int8: every mode serves the blocks in the format (WaS
# fetches them so, shared maps them so), the memory plan charges what the
# ranks hold, and the ranks agree with one process in that format.
for fmt in bf16 int8; do
  if run "$fmt-one" --ranks 1 --weights "$fmt" --summary-json "$tmp/$fmt-one.summary.json"; then
    outputs "$tmp/$fmt-one.jsonl" >"$tmp/$fmt-one.out"
    for mode in was shared; do
      run "$fmt-$mode" --ranks 2 --mode "$mode" --weights "$fmt" --summary-json "$tmp/$fmt-$mode.summary.json" || continue
      outputs "$tmp/$fmt-$mode.jsonl" >"$tmp/$fmt-$mode.out"
      cmp -s "$tmp/$fmt-one.out" "$tmp/$fmt-$mode.out" || fail "--weights $fmt, mode $mode: other tokens than one process"
      jq -e --arg f "$fmt" '.accounting_exact == true and .weights_format == $f and
            all(.rank_summaries[]; .accounting_exact == true and .weights_format == $f)' \
        "$tmp/$fmt-$mode.summary.json" >/dev/null || fail "--weights $fmt, mode $mode: format or accounting wrong"
      grep -qF "weights panels $fmt, kernels $level" "$tmp/$fmt-$mode.log" || fail "--weights $fmt: the summary does not say it"
    done
    jq -e '.rank_summaries[0].plan.weights' "$tmp/$fmt-one.summary.json" >/dev/null &&
      [ "$(jq '.rank_summaries[0].plan.weights' "$tmp/$fmt-one.summary.json")" -lt \
        "$(jq '.rank_summaries[0].plan.weights' "$tmp/replicate.summary.json")" ] ||
      fail "--weights $fmt does not plan fewer weight bytes than fp32"
  fi
done
out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --weights int8 --weights-layout plain --batch-invariant off 2>&1)
[ $? -ne 0 ] && grep -qF -- "--weights-layout panels" <<<"$out" && [ ! -s "$tmp/x.jsonl" ] ||
  fail "--weights int8 with --weights-layout plain is not refused with its remedy: $out"
out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --weights fp8 2>&1)
[ $? -eq 2 ] && grep -qF "weights" <<<"$out" || fail "bad --weights not named: $out"
out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --weights-layout blocked 2>&1)
[ $? -eq 2 ] && grep -qF "weights-layout" <<<"$out" && grep -qF "use one of auto, panels, prepacked, plain" <<<"$out" ||
  fail "bad --weights-layout not named: $out"

# Prompts through the shared queue (the default) or fixed round-robin
# shares: the same outputs.
jq -e 'all(.rank_summaries[]; .split == "queue")' "$tmp/replicate.summary.json" >/dev/null ||
  fail "the default split is not the shared queue"
if run round-robin --ranks 2 --mode replicate --split round-robin --summary-json "$tmp/rr.summary.json"; then
  outputs "$tmp/round-robin.jsonl" >"$tmp/round-robin.out"
  cmp -s "$tmp/single.out" "$tmp/round-robin.out" || fail "--split round-robin differs from one process"
  grep -q '"rank":1' "$tmp/round-robin.jsonl" || fail "--split round-robin: rank 1 produced no results"
  jq -e 'all(.rank_summaries[]; .split == "round-robin")' "$tmp/rr.summary.json" >/dev/null ||
    fail "--split round-robin not in the rank summaries"
fi
# --logprobs 3: the same tokens, each with its log-probability and the 3
# most likely tokens, most likely first (greedy: the token itself).
if run logprobs --ranks 2 --mode cas --logprobs 3; then
  outputs "$tmp/logprobs.jsonl" >"$tmp/logprobs.out"
  cmp -s "$tmp/single.out" "$tmp/logprobs.out" || fail "--logprobs changed the generated tokens"
  jq -e -s 'all(.[]; has("logprobs")) and all(.[] | select(.finish_reason != "error");
      (.logprobs | length) == (.tokens | length) and
      ([.logprobs[] | .logprob <= 0 and (.top_logprobs | length) == 3 and
        .top_logprobs[0].logprob >= .top_logprobs[1].logprob and
        .top_logprobs[1].logprob >= .top_logprobs[2].logprob and
        .top_logprobs[0].token == .token] | all))' "$tmp/logprobs.jsonl" >/dev/null ||
    { fail "--logprobs 3: results lack consistent logprobs"; head -c 600 "$tmp/logprobs.jsonl"; }
  grep -q '"logprobs"' "$tmp/single.jsonl" && fail "logprobs written without --logprobs"
fi
# check_kv_dtype DTYPE FACTOR: one process and CaS on 2 ranks agree token
# for token with --kv-dtype DTYPE (every mode rounds the same cache
# values), the summary names it, and the cache holds at least FACTOR x
# fp32's positions in the same budget.
check_kv_dtype() {
  local dtype=$1 factor=$2
  if run "$dtype-single" --ranks 1 --mode replicate --kv-dtype "$dtype" &&
     run "$dtype-cas" --ranks 2 --mode cas --kv-dtype "$dtype" --summary-json "$tmp/$dtype-cas.summary.json"; then
    outputs "$tmp/$dtype-single.jsonl" >"$tmp/$dtype-single.out"
    outputs "$tmp/$dtype-cas.jsonl" >"$tmp/$dtype-cas.out"
    cmp -s "$tmp/$dtype-single.out" "$tmp/$dtype-cas.out" ||
      { fail "--kv-dtype $dtype: cas (2 ranks) differs from one process"; diff "$tmp/$dtype-single.out" "$tmp/$dtype-cas.out" | head -6; }
    [ "$(jq -r '.kv_dtype' "$tmp/$dtype-cas.summary.json")" = "$dtype" ] || fail "--kv-dtype $dtype not in the summary"
    [ -f "$tmp/cas.summary.json" ] &&
      { [ "$(jq '.kv_capacity_tokens_per_rank' "$tmp/$dtype-cas.summary.json")" -ge \
          $((factor * $(jq '.kv_capacity_tokens_per_rank' "$tmp/cas.summary.json"))) ] ||
        fail "--kv-dtype $dtype: kv capacity not ${factor}x fp32's"; }
  fi
}
check_kv_dtype fp16 2
# int8: 3.6x fp32's positions per byte at width 128 and 4 heads (the
# scales take the rest).
check_kv_dtype int8 3
# A choice flag's bad value is a usage error (exit 2) when the flags are
# parsed, before any rank starts, naming the values and the closest one.
rc=0; out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --ranks 2 --kv-dtype fp8 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "--kv-dtype fp8: exit $rc, want 2 (usage error)"
grep -qF -- "'fp8' is not a value of kv_dtype (did you mean 'fp32'?); use one of fp32, fp16, int8" <<<"$out" ||
  fail "--kv-dtype fp8: unclear error: $out"
rc=0; out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --ranks 2 --split queu 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "--split queu: exit $rc, want 2 (usage error)"
grep -qF "did you mean 'queue'?" <<<"$out" || fail "--split queu: unclear error: $out"
! grep -q '\[rank ' <<<"$out" || fail "--split queu: ranks started before the flag was refused: $out"

# CaS holds only its own blocks, so it gets more KV cache than replicate (WaS
# holds its 2 blocks + 3 cache slots of the tiny model's 4: no saving here).
kv() { jq '.kv_capacity_tokens_per_rank' "$1"; }
command -v jq >/dev/null || fail "jq not found (scripts/install-deps.sh installs it)"
if [ -f "$tmp/replicate.summary.json" ] && [ -f "$tmp/cas.summary.json" ]; then
  [ "$(kv "$tmp/cas.summary.json")" -gt "$(kv "$tmp/replicate.summary.json")" ] ||
    fail "cas kv capacity $(kv "$tmp/cas.summary.json") not above replicate's $(kv "$tmp/replicate.summary.json")"
  [ "$(jq '.passes_was' "$tmp/was.summary.json")" -gt 0 ] || fail "mode was ran no WaS pass"
  [ "$(jq '.passes_cas' "$tmp/cas.summary.json")" -gt 0 ] || fail "mode cas ran no CaS pass"
fi
# Shared holds its own blocks only, like CaS, without CaS's serving
# reserve, and moves nothing.
if [ -f "$tmp/shared.summary.json" ] && [ -f "$tmp/cas.summary.json" ]; then
  [ "$(kv "$tmp/shared.summary.json")" -gt "$(kv "$tmp/cas.summary.json")" ] ||
    fail "shared kv capacity $(kv "$tmp/shared.summary.json") not above cas's $(kv "$tmp/cas.summary.json")"
  jq -e 'all(.rank_summaries[]; .bytes_moved == 0)' "$tmp/shared.summary.json" >/dev/null ||
    fail "mode shared moved bytes"
fi

# --- a budget too small fails up front with the minimum ---
out=$("$PW" infer --prompts "$prompts" --out "$tmp/small.jsonl" --ranks 2 --mode replicate --memory-budget 1MiB 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "tiny budget exited $rc, expected 1"
grep -qF "the minimum is" <<<"$out" || { fail "tiny budget: no minimum in: $out"; }
[ -s "$tmp/small.jsonl" ] && fail "tiny budget: results written although the job cannot start"
out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --memory-budget lots 2>&1)
[ $? -eq 1 ] && grep -qF -- "--memory-budget lots" <<<"$out" || fail "bad --memory-budget not named: $out"
out=$("$PW" infer --prompts "$prompts" --out "$tmp/x.jsonl" --mode sharded 2>&1)
[ $? -eq 2 ] && grep -qF "'sharded' is not a value of mode (did you mean 'shared'?)" <<<"$out" ||
  fail "bad --mode not named: $out"
out=$("$PW" infer --prompts "$tmp/none.jsonl" --out "$tmp/x.jsonl" 2>&1)
[ $? -eq 1 ] && grep -qF "none.jsonl" <<<"$out" || fail "missing prompt file not named: $out"

# --- resume: cut the full results to 4 lines + half a line, rerun ---
if [ -f "$tmp/was.jsonl" ]; then
  head -n 4 "$tmp/was.jsonl" >"$tmp/resume.jsonl"
  sed -n 5p "$tmp/was.jsonl" | head -c 40 >>"$tmp/resume.jsonl"  # torn: no newline
  run resume --ranks 2 --mode was
  grep -qF "resuming: 4 of $valid" "$tmp/resume.log" || { fail "resume not announced"; head -5 "$tmp/resume.log"; }
  [ "$(wc -l <"$tmp/resume.jsonl")" -eq $valid ] || fail "resume: $(wc -l <"$tmp/resume.jsonl") lines, expected $valid"
  outputs "$tmp/resume.jsonl" >"$tmp/resume.out"
  cmp -s "$tmp/single.out" "$tmp/resume.out" || { fail "resumed results differ from a full run"; diff "$tmp/single.out" "$tmp/resume.out" | head; }
  [ "$(cut -d' ' -f1 "$tmp/resume.out" | uniq -d | wc -l)" -eq 0 ] || fail "resume: duplicate ids"
  # A finished job is a no-op.
  out=$("$PW" infer --prompts "$prompts" --out "$tmp/resume.jsonl" "${common[@]}" --ranks 2 --mode was 2>&1)
  grep -qF "nothing to do" <<<"$out" || fail "rerun of a finished job did work: $out"
fi

# --- a checkpoint that `pipewright train` wrote: every mode agrees on it too ---
if "$PW" --help | grep -q '^  train'; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  if "$PW" train --config "$root/examples/tiny.toml" --pp 2 --steps 3 --checkpoint-dir "$tmp/ckpt" >"$tmp/train.log" 2>&1; then
    for mode in replicate cas; do
      "$PW" infer --checkpoint "$tmp/ckpt" --prompts "$prompts" --out "$tmp/ck-$mode.jsonl" "${common[@]}" \
        --ranks 2 --mode "$mode" >"$tmp/ck-$mode.log" 2>&1 || { fail "infer --checkpoint ($mode) failed"; tail -5 "$tmp/ck-$mode.log"; }
      outputs "$tmp/ck-$mode.jsonl" >"$tmp/ck-$mode.out"
    done
    [ "$(wc -l <"$tmp/ck-replicate.out")" -eq $valid ] || fail "checkpoint: $(wc -l <"$tmp/ck-replicate.out") results"
    cmp -s "$tmp/ck-replicate.out" "$tmp/ck-cas.out" || fail "checkpoint: cas differs from replicate"
    # Trained weights are not the random init: outputs differ from the init's.
    cmp -s "$tmp/ck-replicate.out" "$tmp/single.out" && fail "checkpoint outputs equal the random init's"
    grep -qF "model: checkpoint" "$tmp/ck-replicate.log" || fail "checkpoint source not announced"
  else
    fail "train for the checkpoint failed"; tail -5 "$tmp/train.log"
  fi
fi

# --- n samples per prompt: sample k is what a one-sample run with sampling
# seed + k draws; a resumed run writes each (prompt, sample) exactly once.
sampled() {  # sampled FILE [K]: "id tokens" of sample K (every line without K), sorted
  if [ $# -eq 2 ]; then jq -c --argjson k "$2" 'select(.sample == $k) | [.id, .tokens]' "$1" | sort
  else jq -c '[.id, .tokens]' "$1" | sort; fi
}
sampling=(--temperature 0.9 --top-k 20 --ranks 2 --mode replicate)
if run n4 "${sampling[@]}" --n 4 --sampling-seed 7; then
  [ "$(wc -l <"$tmp/n4.jsonl")" -eq $((4 * valid)) ] || fail "n=4: expected $((4 * valid)) results"
  for k in 0 1 2 3; do
    run "seed$k" "${sampling[@]}" --sampling-seed $((7 + k)) &&
      { [ "$(sampled "$tmp/n4.jsonl" "$k")" = "$(sampled "$tmp/seed$k.jsonl")" ] ||
          fail "n=4: sample $k differs from a one-sample run with seed $((7 + k))"; }
  done
  # Resume: drop every sample 2 and tear the last line; the rerun fills in exactly those.
  grep -v '"sample":2' "$tmp/n4.jsonl" | head -n -1 >"$tmp/n4r.jsonl"
  tail -n 1 "$tmp/n4.jsonl" | head -c 20 >>"$tmp/n4r.jsonl"
  "$PW" infer --prompts "$prompts" --out "$tmp/n4r.jsonl" "${common[@]}" "${sampling[@]}" --n 4 --sampling-seed 7 \
    >"$tmp/n4r.log" 2>&1 || fail "n=4 resume exited $?"
  [ "$(jq -r '[.id, .sample] | @tsv' "$tmp/n4r.jsonl" | sort | uniq -d)" = "" ] || fail "n=4 resume: a sample written twice"
  [ "$(wc -l <"$tmp/n4r.jsonl")" -eq $((4 * valid)) ] || fail "n=4 resume: expected $((4 * valid)) results"
  for k in 0 1 2 3; do
    [ "$(sampled "$tmp/n4r.jsonl" "$k")" = "$(sampled "$tmp/n4.jsonl" "$k")" ] || fail "n=4 resume: sample $k differs"
  done
fi

# --- prefix caching: prompts behind a common start map its KV blocks (2 of
# 16 positions each) instead of prefilling them; on 2 ranks, through the
# queue, in a network pool and the shared one, outputs equal caching off's.
start='Permission is hereby granted, free: '  # 36 bytes
for q in a bb "what next" 0123456789 "x y" Zed "the end" no. copy "?"; do
  printf '{"id": "%s", "prompt": "%s%s"}\n' "$q" "$start" "$q"
done >"$tmp/prefixed.jsonl"
for mode in was shared; do
  for cache in on off; do
    name=prefix-$mode-$cache
    "$PW" infer --prompts "$tmp/prefixed.jsonl" --out "$tmp/$name.jsonl" "${common[@]}" --ranks 2 --mode "$mode" \
      --prefix-cache "$cache" --summary-json "$tmp/$name.json" >"$tmp/$name.log" 2>&1 ||
      { fail "infer $name exited $?"; tail -5 "$tmp/$name.log"; }
  done
  [ "$(sampled "$tmp/prefix-$mode-on.jsonl")" = "$(sampled "$tmp/prefix-$mode-off.jsonl")" ] ||
    fail "prefix cache ($mode): outputs differ from caching off"
  [ "$(wc -l <"$tmp/prefix-$mode-on.jsonl")" -eq 10 ] || fail "prefix cache ($mode): expected 10 results"
  # Each rank computes the start once; every other prompt maps 32 positions.
  hits=$(jq '.prefix_hit_tokens' "$tmp/prefix-$mode-on.json")
  [ "$hits" -ge $((8 * 32)) ] || fail "prefix cache ($mode): $hits positions from the cache, expected >= 256"
  [ "$(jq '.prefix_hit_tokens' "$tmp/prefix-$mode-off.json")" -eq 0 ] || fail "prefix cache off ($mode) still hit"
  grep -q "prefix cache: .*% of prompt positions hit" "$tmp/prefix-$mode-on.log" ||
    fail "prefix cache ($mode): no hit rate in the summary"
done

# --- structured output: a line's json_schema or regex, or --json-schema FILE
# for lines without one: every output parses and validates (checked with jq
# here); a schema that cannot be honoured makes its line a bad line naming it.
echo '{"type":"object","properties":{"answer":{"enum":["yes","no"]},"score":{"type":"integer","minimum":1,"maximum":5}},"required":["answer","score"]}' \
  >"$tmp/schema.json"
{
  echo '{"id": "j", "prompt": "Describe it:", "json_schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "n": {"type": "integer", "minimum": 0, "maximum": 9}, "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,3}$"}, "maxItems": 2}}, "required": ["name", "n"]}, "n": 3}'
  echo '{"id": "r", "prompt": "Yes or no?", "regex": "(yes|no)"}'
  echo '{"id": "d", "prompt": "Rate it:"}'
  echo '{"id": "bad", "prompt": "x", "json_schema": {"type": "string", "format": "email"}}'
} >"$tmp/structured.jsonl"
if "$PW" infer --prompts "$tmp/structured.jsonl" --out "$tmp/structured.out" --json-schema "$tmp/schema.json" \
     --set model.seq_len=256 --memory-budget 16MiB --max-tokens 200 --temperature 0.9 --ranks 2 --mode was \
     >"$tmp/structured.log" 2>&1; then
  grep -q 'structured.jsonl:4: json_schema: "format" is not supported' "$tmp/structured.log" ||
    { fail "structured: the bad schema line was not reported"; grep structured.jsonl "$tmp/structured.log"; }
  [ "$(wc -l <"$tmp/structured.out")" -eq 5 ] || fail "structured: expected 5 results (3 samples of j, r, d)"
  [ "$(jq -r 'select(.finish_reason != "end") | .id' "$tmp/structured.out")" = "" ] ||
    fail "structured: an output did not end as a whole match"
  jq -r 'select(.id == "j") | .text' "$tmp/structured.out" | while read -r t; do
    jq -e '(keys_unsorted[0:2] == ["name", "n"]) and (.name | type == "string" and length <= 6) and
           (.n | type == "number" and . >= 0 and . <= 9 and floor == .) and
           ((.tags // []) | length <= 2 and all(test("^[a-z]{1,3}$")))' <<<"$t" >/dev/null ||
      fail "structured: j's output does not validate: $t"
  done
  [[ "$(jq -r 'select(.id == "r") | .text' "$tmp/structured.out")" =~ ^(yes|no)$ ]] || fail "structured: r is not yes/no"
  jq -r 'select(.id == "d") | .text' "$tmp/structured.out" |
    jq -e '(.answer == "yes" or .answer == "no") and (.score | . >= 1 and . <= 5)' >/dev/null ||
    fail "structured: d does not follow --json-schema: $(jq -r 'select(.id == "d") | .text' "$tmp/structured.out")"
else
  fail "structured output run exited $?"; tail -5 "$tmp/structured.log"
fi
# A --json-schema that cannot be honoured fails before any rank starts.
echo '{"type": "integer", "multipleOf": 3}' >"$tmp/bad-schema.json"
if "$PW" infer --prompts "$tmp/structured.jsonl" --out "$tmp/bad-schema.out" --json-schema "$tmp/bad-schema.json" \
     "${common[@]}" >"$tmp/bad-schema.log" 2>&1; then
  fail "a --json-schema with multipleOf was accepted"
fi
grep -qF -- "--json-schema $tmp/bad-schema.json: json_schema: \"multipleOf\" is not supported" "$tmp/bad-schema.log" ||
  { fail "the bad --json-schema error does not name the file and keyword"; cat "$tmp/bad-schema.log"; }
grep -q '^ *\[rank' "$tmp/bad-schema.log" && fail "ranks started for a bad --json-schema"

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "infer_cli_test: all passed"
