#!/bin/sh
# tests/fuzz/run-safetensors.sh BUILD_DIR [SECONDS]: build the libFuzzer
# target for libamprt's safetensors reader (fuzz_safetensors.c), replay its
# seeds and saved crashers (tests/fuzz/crashers-safetensors/, regressions),
# then fuzz for SECONDS (default 20).  Like run.sh, it writes only under
# BUILD_DIR/fuzz-safetensors/ and exits non-zero on any finding.
set -u
BUILD=${1:?usage: sh tests/fuzz/run-safetensors.sh BUILD_DIR [SECONDS]}
SECONDS_=${2:-20}
OUT=$BUILD/fuzz-safetensors
CC_FUZZ=${CLANG:-clang}
mkdir -p "$OUT/corpus" "$OUT/artifacts"

# the reader and what it calls (the runtime's status texts and dtype sizes),
# as the compiler links them: instrumenting the whole runtime (kernels
# included) took most of an hour on a loaded machine and fuzzed nothing more
RT_SRCS="runtime/src/safetensors.c runtime/src/st_params.c runtime/src/dtype.c runtime/src/status.c"
# shellcheck disable=SC2086
if ! "$CC_FUZZ" -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all -Iruntime/include -Iruntime/src -o "$OUT/fuzz_safetensors" \
        tests/fuzz/fuzz_safetensors.c $RT_SRCS -lm -lpthread >"$OUT/build.log" 2>&1; then
    cat "$OUT/build.log" >&2
    if [ "${AMPC_FUZZ_OPTIONAL:-0}" = 1 ]; then
        echo "run-safetensors.sh: SKIPPED: $CC_FUZZ cannot build a libFuzzer target"
        exit 0
    fi
    echo "run-safetensors.sh: FAILED: cannot build the fuzz target" >&2
    exit 1
fi

failures=0
for f in tests/fuzz/corpus/safetensors/* tests/fuzz/crashers-safetensors/*; do
    [ -f "$f" ] || continue
    case $f in */.keep) continue ;; esac
    if ! "$OUT/fuzz_safetensors" -timeout="${AMPC_FUZZ_TIMEOUT:-10}" "$f" >"$OUT/replay.log" 2>&1; then
        echo "FINDING: $f (replay: $OUT/fuzz_safetensors $f)" >&2
        tail -20 "$OUT/replay.log" >&2
        failures=$((failures + 1))
    fi
done
echo "== safetensors: replayed seeds and regressions: $failures finding(s)"
[ "$failures" -eq 0 ] || exit 1
[ "$SECONDS_" -gt 0 ] || exit 0

cp tests/fuzz/corpus/safetensors/* "$OUT/corpus/"
echo "== safetensors: fuzzing for ${SECONDS_}s"
if ! "$OUT/fuzz_safetensors" -timeout="${AMPC_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=4096 -max_total_time="$SECONDS_" \
        -dict=tests/fuzz/safetensors.dict -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 "$OUT/corpus" \
        >"$OUT/fuzz.log" 2>&1; then
    tail -40 "$OUT/fuzz.log" >&2
    for a in "$OUT"/artifacts/*; do
        [ -f "$a" ] && echo "reproducer: $a  (replay: $OUT/fuzz_safetensors $a)" >&2
    done
    echo "run-safetensors.sh: FAILED: the fuzzer found a problem" >&2
    exit 1
fi
grep -E "^#[0-9]+ +DONE" "$OUT/fuzz.log" | tail -1
echo "== safetensors: no findings"
