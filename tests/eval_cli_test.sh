#!/usr/bin/env bash
# `pipewright eval` end to end (docs/inference.md, "Scoring"): a checkpoint
# trained on a text scores that text better than the random init it started
# from; one rank and two ranks (data-parallel, windows split between them)
# give the same figures; --json and --summary-json are the same JSON;
# --max-windows limits the windows; bad input is refused with a message
# that says what to fix. Registered with ctest.
# Usage: tests/eval_cli_test.sh PATH/TO/pipewright
set -uo pipefail
PW=${1:?usage: eval_cli_test.sh PATH/TO/pipewright}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/tests/cli_test_lib.sh"

if ! "$PW" --help | grep -q '^  eval'; then
  echo "eval checks skipped: this pipewright has no eval command"
  exit 0
fi
expect_in() { grep -qF -- "$2" "$tmp/$1.log" || { fail "$1: output lacks '$2'"; tail -5 "$tmp/$1.log"; }; }

# The text: 6 KB of the GPL (any text works; the training data is the same file).
head -c 6000 /usr/share/common-licenses/GPL-3 >"$tmp/text.txt"
tiny=(--config "$root/examples/tiny.toml")
run train train "${tiny[@]}" --pp 2 --steps 30 --eval-batches 0 --data "$tmp/text.txt" \
  --checkpoint-dir "$tmp/ckpt"
[ "$rc" -eq 0 ] || { fail "training the checkpoint failed"; tail -5 "$tmp/train.log"; }

run init eval "${tiny[@]}" --data "$tmp/text.txt" --json
[ "$rc" -eq 0 ] || { fail "eval of the random init exited $rc"; tail -5 "$tmp/init.log"; }
run one eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --json --summary-json "$tmp/one.json"
[ "$rc" -eq 0 ] || { fail "eval of the checkpoint exited $rc"; tail -5 "$tmp/one.log"; }
run two eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --json --ranks 2
[ "$rc" -eq 0 ] || { fail "eval on 2 ranks exited $rc"; tail -5 "$tmp/two.log"; }
field() { grep '^{' "$tmp/$1.log" | tail -n 1 | jq -r ".$2"; }

init_loss=$(field init loss)
loss=$(field one loss)
# 6000 bytes, windows of the tiny model's seq_len: every byte but the first predicted.
[ "$(field one tokens)" = 5999 ] || fail "scored $(field one tokens) tokens of a 6000-byte text, want 5999"
awk -v a="$loss" -v b="$init_loss" 'BEGIN { exit !(a + 0.3 < b) }' ||
  fail "the trained checkpoint's loss $loss is not clearly below the random init's $init_loss"
awk -v l="$init_loss" 'BEGIN { exit !(l > 4.5 && l < 7) }' ||
  fail "the random init's loss $init_loss is not near ln 256 = 5.55"
awk -v a="$loss" -v b="$(field two loss)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-9 * a) }' ||
  fail "2 ranks gave loss $(field two loss), 1 rank $loss"
[ "$(field two ranks)" = 2 ] || fail "the 2-rank run does not say ranks 2"
awk -v l="$loss" -v p="$(field one perplexity)" -v b="$(field one bits_per_byte)" \
  'BEGIN { e = exp(l) - p; if (e < 0) e = -e; f = l / log(2) - b; if (f < 0) f = -f; exit !(e < 1e-6 * p && f < 1e-9) }' ||
  fail "perplexity or bits/byte do not follow from the loss"
[ "$(jq -S . "$tmp/one.json")" = "$(grep '^{' "$tmp/one.log" | tail -n 1 | jq -S .)" ] ||
  fail "--summary-json differs from --json"

run text eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --max-windows 3
[ "$rc" -eq 0 ] || fail "eval --max-windows 3 exited $rc"
expect_in text "in 3 windows"
expect_in text "perplexity"

# What a weight format costs on the trained checkpoint and its own text:
# the fp32 model is scored beside it, the loss moves by at most 0.01 nats a
# token in bf16 and 0.05 in int8, and the most likely next token mostly
# stays; 2 ranks add the comparison up alike.
for fmt in bf16:0.01 int8:0.05; do
  name=${fmt%%:*} bound=${fmt##*:}
  run "w_$name" eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --json --weights "$name" --ranks 2
  [ "$rc" -eq 0 ] || { fail "eval --weights $name exited $rc"; tail -5 "$tmp/w_$name.log"; continue; }
  [ "$(field "w_$name" weights)" = "$name" ] || fail "eval --weights $name does not say weights $name"
  awk -v a="$(field "w_$name" loss_fp32)" -v b="$loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-6 * b) }' ||
    fail "--weights $name: its fp32 reference loss $(field "w_$name" loss_fp32) is not the fp32 run's $loss"
  awk -v m="$(field "w_$name" mean_abs_token_loss_delta)" -v d="$(field "w_$name" loss_delta)" -v b="$bound" \
    'BEGIN { if (d < 0) d = -d; exit !(m > 0 && m <= b && d <= m) }' ||
    fail "--weights $name: mean |per-token loss difference| $(field "w_$name" mean_abs_token_loss_delta) (loss delta $(field "w_$name" loss_delta)) is not within (0, $bound]"
  awk -v g="$(field "w_$name" greedy_agreement)" 'BEGIN { exit !(g >= 0.9 && g <= 1) }' ||
    fail "--weights $name: the greedy token agrees with fp32's at only $(field "w_$name" greedy_agreement) of positions"
done
run w_text eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --max-windows 3 --weights int8
[ "$rc" -eq 0 ] || fail "eval --weights int8 (text) exited $rc"
expect_in w_text "weights int8 against fp32"
run w_bad eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --weights fp8
[ "$rc" -ne 0 ] || fail "eval --weights fp8 exited 0"
expect_in w_bad "fp8"

run no_data eval --checkpoint "$tmp/ckpt"
[ "$rc" -ne 0 ] || fail "eval without --data exited 0"
expect_in no_data "--data FILE is required"
: >"$tmp/empty.txt"
run empty eval --checkpoint "$tmp/ckpt" --data "$tmp/empty.txt"
[ "$rc" -ne 0 ] || fail "eval of an empty text exited 0"
expect_in empty "scoring needs at least 2"
run missing eval --checkpoint "$tmp/nowhere" --data "$tmp/text.txt"
[ "$rc" -ne 0 ] || fail "eval of a missing checkpoint exited 0"
expect_in missing "$tmp/nowhere"
run both eval --checkpoint "$tmp/ckpt" "${tiny[@]}" --data "$tmp/text.txt"
[ "$rc" -ne 0 ] || fail "--checkpoint with --config was accepted"
expect_in both "give one of --checkpoint, --model and --config"

if [ "$failures" -ne 0 ]; then
  echo "$failures eval check(s) failed"
  exit 1
fi
echo "all eval checks passed"
