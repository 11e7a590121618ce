#!/bin/sh
# run-all.sh BUILD: every test suite, one after the other, with a summary.
# Each suite prints its own results; this prints which suites passed and a
# last line "N passed, M failed" counting suites.
set -u
BUILD=${1:-build}
passed=0
failed=0
failed_names=""
times=""
run() {
    name=$1
    shift
    echo
    echo "######## $name"
    start=$(date +%s)
    if "$@"; then
        passed=$((passed + 1))
        result=passed
    else
        failed=$((failed + 1))
        failed_names="$failed_names $name"
        result=FAILED
    fi
    # the time per suite, so a suite that grows shows in the CI log
    seconds=$(($(date +%s) - start))
    echo "######## $name: $result in $seconds s"
    times="$times $name=${seconds}s"
}
run unit make --no-print-directory BUILD="$BUILD" test-unit
run runtime make --no-print-directory BUILD="$BUILD" test-runtime
run aarch64 make --no-print-directory BUILD="$BUILD" test-aarch64
run golden make --no-print-directory BUILD="$BUILD" test-golden
run hostile make --no-print-directory BUILD="$BUILD" test-hostile
run e2e make --no-print-directory BUILD="$BUILD" test-e2e
run ops make --no-print-directory BUILD="$BUILD" test-ops
run grad make --no-print-directory BUILD="$BUILD" test-grad
run train make --no-print-directory BUILD="$BUILD" test-train
run mpi make --no-print-directory BUILD="$BUILD" test-mpi
run torch make --no-print-directory BUILD="$BUILD" test-torch
run onnx make --no-print-directory BUILD="$BUILD" test-onnx
run install make --no-print-directory BUILD="$BUILD" test-install
run sanitizers make --no-print-directory BUILD="$BUILD" test-sanitize
run fuzz sh tests/fuzz/run.sh "$BUILD" "${AMPC_FUZZ_SECONDS:-60}"
run fuzz-weights sh tests/fuzz/run-safetensors.sh "$BUILD" "${AMPC_FUZZ_SECONDS_WEIGHTS:-20}"
echo
[ -n "$failed_names" ] && echo "failed suites:$failed_names"
echo "suite times:$times"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
