# Shared by the CLI shell tests (sourced after PW is set): a temporary
# directory removed on exit, `fail` (counted in $failures), one thread per
# process, jq required, and `run NAME ARGS...` (pipewright ARGS, output in
# $tmp/NAME.log, exit code in $rc).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
command -v jq >/dev/null || { echo "FAIL: jq not found (scripts/install-deps.sh installs it)"; exit 1; }
run() {
  local name=$1
  shift
  "$PW" "$@" >"$tmp/$name.log" 2>&1
  rc=$?
}
