#!/bin/sh
# tests/fuzz/run.sh BUILD_DIR [SECONDS]: build the libFuzzer target for the
# ampc front end and pipeline, replay the seed corpus and every saved
# crasher (regressions), then fuzz for SECONDS (default 60).
#
#   sh tests/fuzz/run.sh build          # what `make test-fuzz` runs
#   sh tests/fuzz/run.sh build 600      # a longer session
#   sh tests/fuzz/run.sh build 0        # build and replay only
#
# Everything it writes is under BUILD_DIR/fuzz/: the fuzzer binary, its
# objects, the working corpus (a copy of tests/fuzz/corpus/frontend that
# grows across runs) and the artifacts of any finding.  The repository is
# never modified.  Exits non-zero on any finding (crash, sanitizer report,
# leak, timeout, out-of-memory, internal compiler error), printing the path
# of the reproducer.
#
# Environment:
#   CLANG               the compiler to use (default: clang, else clang-19..14)
#   AMPC_FUZZ_OPTIONAL  1: if no clang with libFuzzer is found, say so and
#                       exit 0 instead of failing
#   AMPC_FUZZ_ARGS      extra libFuzzer flags for the fuzzing step
#                       (e.g. "-fork=2" or "-seed=1")
#   AMPC_FUZZ_TIMEOUT   seconds of wall time one input may take (default 10;
#                       more on a heavily loaded machine, where the saved
#                       quadratic-time crashers need longer)
#
set -u

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: sh tests/fuzz/run.sh BUILD_DIR [SECONDS]" >&2
    exit 2
fi
BUILD=$1
SECONDS_=${2:-60}
case $SECONDS_ in
    ''|*[!0-9]*) echo "run.sh: SECONDS must be a non-negative integer, not '$SECONDS_'" >&2; exit 2 ;;
esac

# BUILD_DIR is taken relative to where run.sh was started; then work from the top
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
FUZZ_SRC=tests/fuzz
OUT=$BUILD/fuzz
GEN=$BUILD/gen

# ---- a clang with libFuzzer ---------------------------------------------------

no_fuzzer() {
    echo "run.sh: $1" >&2
    if [ "${AMPC_FUZZ_OPTIONAL:-}" = 1 ]; then
        echo "run.sh: SKIPPED: fuzzing needs clang with libFuzzer (-fsanitize=fuzzer); AMPC_FUZZ_OPTIONAL=1, so not failing" >&2
        exit 0
    fi
    echo "run.sh: FAILED: fuzzing needs clang with libFuzzer (-fsanitize=fuzzer); install clang" \
         "(Debian: apt-get install clang) or set AMPC_FUZZ_OPTIONAL=1 to skip" >&2
    exit 1
}

CC_FUZZ=${CLANG:-}
if [ -z "$CC_FUZZ" ]; then
    for cand in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
        if command -v "$cand" >/dev/null 2>&1; then
            CC_FUZZ=$cand
            break
        fi
    done
fi
[ -n "$CC_FUZZ" ] || no_fuzzer "no clang found (set CLANG=/path/to/clang)"

mkdir -p "$OUT/obj" "$OUT/artifacts" || exit 2
probe=$OUT/probe
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' > "$probe.c"
if ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined -o "$probe" "$probe.c" >"$probe.log" 2>&1; then
    cat "$probe.log" >&2
    no_fuzzer "$CC_FUZZ cannot build a libFuzzer target (-fsanitize=fuzzer,address,undefined)"
fi
rm -f "$probe" "$probe.c" "$probe.log"

# ---- build ----------------------------------------------------------------------

# make regenerates them only when grammar/ or policies/ changed
make --no-print-directory -s "$GEN/parser.c" "$GEN/lexer.c" "$GEN/policies.c" BUILD="$BUILD" || {
    echo "run.sh: FAILED: cannot generate $GEN/parser.c, lexer.c, policies.c (needs bison and flex)" >&2
    exit 1
}

SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS_FUZZ="-std=c11 -D_GNU_SOURCE -g -O1 $SAN -Isrc -Isrc/core -Isrc/front -Isrc/middle -Isrc/back -Iruntime/include -I$GEN"
GEN_WARN="-Wno-unused-function -Wno-sign-compare -Wno-unused-parameter -Wno-overlength-strings"
# every header, table and included fragment of the compiler and runtime:
# an object kept after a struct changed in any of them would run with the
# old layout (and report false findings)
DEPS="$(find src runtime/include runtime/src \( -name '*.h' -o -name '*.def' -o -name '*.inc' \) | sort) $GEN/parser.h $GEN/lexer.h $FUZZ_SRC/run.sh"

# compile SRC OBJ [EXTRA FLAGS]: only when OBJ is missing or older than its inputs
compile() {
    src=$1
    obj=$2
    shift 2
    stale=0
    if [ -f "$obj" ]; then
        for d in "$src" $DEPS; do
            [ -n "$(find "$d" -prune -newer "$obj")" ] && stale=1
        done
    else
        stale=1
    fi
    [ $stale = 1 ] || return 0
    echo "  CC $obj"
    # shellcheck disable=SC2086
    "$CC_FUZZ" $CFLAGS_FUZZ "$@" -c -o "$obj" "$src"
}

echo "== building $OUT/fuzz_frontend with $CC_FUZZ"
OBJS=
for src in src/*.c src/core/*.c src/front/*.c src/middle/*.c src/back/*.c; do
    [ "$src" = src/main.c ] && continue
    obj=$OUT/obj/$(basename "$src" .c).o
    compile "$src" "$obj" -Wall -Wextra || { echo "run.sh: FAILED: compiling $src" >&2; exit 1; }
    OBJS="$OBJS $obj"
done
for g in parser lexer policies; do
    obj=$OUT/obj/gen_$g.o
    # shellcheck disable=SC2086
    compile "$GEN/$g.c" "$obj" $GEN_WARN || { echo "run.sh: FAILED: compiling $GEN/$g.c" >&2; exit 1; }
    OBJS="$OBJS $obj"
done
# the runtime's safetensors reader and weights loader, which --embed-weights uses
for src in runtime/src/safetensors.c runtime/src/st_params.c runtime/src/dtype.c runtime/src/status.c; do
    obj=$OUT/obj/rt_$(basename "$src" .c).o
    compile "$src" "$obj" -Iruntime/include -Wall -Wextra || { echo "run.sh: FAILED: compiling $src" >&2; exit 1; }
    OBJS="$OBJS $obj"
done
obj=$OUT/obj/fuzz_frontend.o
# imports in fuzz inputs resolve in tests/fuzz/imports (fuzz_frontend.c)
compile "$FUZZ_SRC/fuzz_frontend.c" "$obj" -Wall -Wextra "-DAMPC_FUZZ_IMPORT_DIR=\"$ROOT/$FUZZ_SRC/imports\"" || {
    echo "run.sh: FAILED: compiling the fuzz target" >&2
    exit 1
}
OBJS="$OBJS $obj"
# shellcheck disable=SC2086
"$CC_FUZZ" -fsanitize=fuzzer,address,undefined -o "$OUT/fuzz_frontend" $OBJS -lgmp -lm || {
    echo "run.sh: FAILED: linking $OUT/fuzz_frontend" >&2
    exit 1
}
FUZZER=$OUT/fuzz_frontend

# ---- replay: seeds and regressions -------------------------------------------------

COMMON="-timeout=${AMPC_FUZZ_TIMEOUT:-10} -rss_limit_mb=2048"
# UBSan: a stack trace with each report (the build already makes them fatal)
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export UBSAN_OPTIONS
failures=0
# the interesting part of a libFuzzer report: no libFuzzer/libc frames, no hex dumps
filter_report() {
    grep -v -e '^INFO:' -e '^Running:' -e '^Executed' -e '^\*\*\*' -e 'Running 1 inputs' \
        -e 'in fuzzer::' -e '__libc_start' -e ' in _start ' -e '^0x' -e '^MS: ' -e '^Base64: '
}
# replay FILE: run the target once on FILE; report it if anything fires
replay() {
    # shellcheck disable=SC2086
    if ! "$FUZZER" $COMMON "$1" >"$OUT/replay.log" 2>&1; then
        echo "FINDING: $1 (replay log below; reproduce with: $FUZZER $1)" >&2
        filter_report <"$OUT/replay.log" | head -40 >&2
        failures=$((failures + 1))
    fi
}

nseeds=0
for f in "$FUZZ_SRC"/corpus/frontend/*; do
    [ -f "$f" ] || continue
    replay "$f"
    nseeds=$((nseeds + 1))
done
ncrashers=0
for f in "$FUZZ_SRC"/crashers/*; do
    [ -f "$f" ] || continue
    case $f in *.md|*.txt) continue ;; esac
    replay "$f"
    ncrashers=$((ncrashers + 1))
done
echo "== replayed $nseeds seeds and $ncrashers regression inputs: $failures finding(s)"
if [ $failures -ne 0 ]; then
    echo "run.sh: FAILED: $failures input(s) of the corpus or of tests/fuzz/crashers/ fail; see above" >&2
    exit 1
fi

# ---- fuzz ---------------------------------------------------------------------

[ "$SECONDS_" -gt 0 ] || exit 0

WORK=$OUT/corpus
mkdir -p "$WORK" || exit 2
cp "$FUZZ_SRC"/corpus/frontend/* "$WORK"/ 2>/dev/null
# artifacts of earlier runs stay where they are; only new ones are reported
stamp=$OUT/fuzz.stamp
: >"$stamp"

echo "== fuzzing for ${SECONDS_}s (corpus $WORK, artifacts $OUT/artifacts/)"
# shellcheck disable=SC2086
"$FUZZER" $COMMON -max_len=4096 -max_total_time="$SECONDS_" -dict="$FUZZ_SRC/frontend.dict" \
    -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 ${AMPC_FUZZ_ARGS:-} \
    "$WORK" >"$OUT/fuzz.log" 2>&1
rc=$?
# the last status line and the final stats, for the log of the caller
grep -E '^#[0-9]+' "$OUT/fuzz.log" | tail -n 1
grep -E '^(stat::|Done )' "$OUT/fuzz.log"

new=$(find "$OUT/artifacts" -type f -newer "$stamp")
if [ $rc -ne 0 ] || [ -n "$new" ]; then
    echo "run.sh: FAILED: the fuzzer found a problem (exit status $rc); log: $OUT/fuzz.log" >&2
    grep -A 30 -E '^==[0-9]+==ERROR|runtime error|internal compiler error|broken contract|fuzz target exited|ERROR: libFuzzer' \
        "$OUT/fuzz.log" | filter_report | head -60 >&2
    for a in $new; do
        echo "reproducer: $a  (replay: $FUZZER $a)" >&2
    done
    echo "To keep it as a regression: cp REPRODUCER tests/fuzz/crashers/NAME.amp (see tests/fuzz/README.md)" >&2
    exit 1
fi
echo "== no findings"
exit 0
