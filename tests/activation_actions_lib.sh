# Shared by tests/recompute_cli_test.sh and tests/offload_cli_test.sh, which
# check user kinds the executor runs: sourced after they set PW, root, tmp
# and fail(). Defines:
#   train         pipewright train of the yardstick with dropout on (so a
#                 replayed forward must reproduce its masks), pp = 2
#   run NAME ARGS...  pipewright ARGS into $tmp/NAME.log; sets rc
#   losses FILE   the [loss, grad_norm] lines of a --metrics-out file
#   zb_h1_with NAME KINDS  writes $tmp/NAME.pipe: examples/schedules/zb-h1.pipe
#                 renamed NAME, with the kind lines KINDS (\n-separated)
#                 before its priority line (split backward: "before=I")

sed 's/^dropout = .*/dropout = 0.1/' "$root/examples/small.toml" >"$tmp/small-dropout.toml"
grep -q '^dropout = 0.1' "$tmp/small-dropout.toml" || fail "could not turn dropout on"
train=(train --config "$tmp/small-dropout.toml" --pp 2 --eval-batches 0)

run() {
  local name=$1
  shift
  "$PW" "$@" >"$tmp/$name.log" 2>&1
  rc=$?
}

losses() { jq -c '[.loss, .grad_norm]' "$1" 2>/dev/null | grep -v null; }

zb_h1_with() {
  sed -e "s/^schedule zb-h1/schedule $1/" -e "s/^priority F > I > W/$2\npriority F > I > W/" \
      "$root/examples/schedules/zb-h1.pipe" >"$tmp/$1.pipe"
  grep -q '^kind ' "$tmp/$1.pipe" || fail "could not write $1.pipe"
}
