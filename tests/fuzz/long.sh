#!/bin/sh
# tests/fuzz/long.sh BUILD_DIR [SECONDS]: the long fuzzing session, outside
# CI (`make fuzz-long`, SECONDS default 3600 = one hour per fuzzer).  Runs
# each fuzzer in turn through its own script: the front end and pipeline
# (run.sh: fuzz_frontend) and libamprt's safetensors reader
# (run-safetensors.sh: fuzz_safetensors), each replaying its seeds and saved
# crashers first, then fuzzing for SECONDS.  Prints, and writes to
# BUILD_DIR/fuzz-long/summary.md, one table row per fuzzer: the date, the
# duration, the executions, the coverage libFuzzer reports (cov: edges,
# ft: features), the corpus size, and the findings (new artifacts; 0 is a
# clean run).  Exits non-zero if either fuzzer found something.  The
# figures of recorded runs are in tests/fuzz/results/.
# AMPC_FUZZ_TIMEOUT (seconds of wall time per input, default 10) reaches
# both scripts: raise it on a heavily loaded machine.
set -u
BUILD=${1:?usage: sh tests/fuzz/long.sh BUILD_DIR [SECONDS]}
SECONDS_=${2:-3600}
case $SECONDS_ in
    ''|*[!0-9]*|0) echo "long.sh: SECONDS must be a positive integer, not '$SECONDS_'" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
mkdir -p "$BUILD/fuzz-long" && BUILD=$(cd "$BUILD" && pwd) || exit 2
SUMMARY=$BUILD/fuzz-long/summary.md
status=0

# row NAME LOG ARTIFACTS STAMP RC START END: one summary row from a fuzzer's log
row() {
    last=$(grep -E '^#[0-9]+' "$2" | tail -n 1)
    execs=$(printf '%s\n' "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
    cov=$(printf '%s\n' "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(printf '%s\n' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(printf '%s\n' "$last" | sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p')
    found=$(find "$3" -type f -newer "$4" 2>/dev/null | wc -l | tr -d ' ')
    printf '| %s | %s | %ss | %s | %s | %s | %s | %s | %s |\n' "$1" "$6" "$(($7 - $8))" "${execs:-?}" \
        "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found" "$([ "$5" -eq 0 ] && echo clean || echo "FAILED (exit $5)")"
}

{
    echo "| fuzzer | started (UTC) | duration | executions | cov (edges) | ft (features) | corpus (inputs/bytes) | findings | result |"
    echo "|---|---|---|---|---|---|---|---|---|"
} >"$SUMMARY"

for fuzzer in frontend safetensors; do
    if [ "$fuzzer" = frontend ]; then
        script=tests/fuzz/run.sh dir=$BUILD/fuzz
    else
        script=tests/fuzz/run-safetensors.sh dir=$BUILD/fuzz-safetensors
    fi
    mkdir -p "$dir/artifacts"
    stamp=$BUILD/fuzz-long/$fuzzer.stamp
    : >"$stamp"
    sleep 1 # artifacts newer than the stamp are this run's
    date=$(date -u '+%Y-%m-%d %H:%M')
    start=$(date +%s)
    echo "== fuzz-long: $fuzzer for ${SECONDS_}s"
    sh "$script" "$BUILD" "$SECONDS_"
    rc=$?
    end=$(date +%s)
    [ "$rc" -eq 0 ] || status=1
    row "$fuzzer" "$dir/fuzz.log" "$dir/artifacts" "$stamp" "$rc" "$date" "$end" "$start" >>"$SUMMARY"
done
echo
cat "$SUMMARY"
exit "$status"
