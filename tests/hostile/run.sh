#!/bin/sh
# tests/hostile/run.sh BUILD: the hostile-input corpus.  Inputs an attacker or
# a careless user would give ampc, each run under a CPU-time, wall-time and
# memory bound, checked for its documented exit code (docs/cli.md: 1 input
# error, 2 usage, 3 I/O or environment; never 4 or a signal) and for the
# message it must print.  Cases that could lose data also check that no file
# was damaged.  Then every file of the fuzzers' seed corpora and saved
# crashers goes through the same bounds and must exit 0, 1, 2 or 3.
#
# Prints ok/FAIL per case and a last line "N passed, M failed"; exits
# non-zero on any failure.  Everything it writes is under BUILD/hostile.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
AMPC=$(cd "$BUILD" && pwd)/ampc
CASES=$ROOT/tests/hostile/cases
W=$(cd "$BUILD" && pwd)/hostile
rm -rf "$W" && mkdir -p "$W" || exit 2
# each case's bounds: generous for a model of a few lines, small enough that
# a hang or a runaway allocation fails the case instead of the machine
MEM_KB=${HOSTILE_MEM_KB:-1000000}
CPU_S=${HOSTILE_CPU_S:-10}
WALL_S=${HOSTILE_WALL_S:-20}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# bounded CMD...: run CMD in $W under the bounds, stdin from /dev/null,
# stdout to $W/out, stderr to $W/err; sets rc.
bounded() {
    (cd "$W" && ulimit -v "$MEM_KB" && ulimit -t "$CPU_S" && exec timeout -s KILL "$WALL_S" "$@") \
        </dev/null >"$W/out" 2>"$W/err"
    rc=$?
}

# expect NAME RC PATTERN CMD...: CMD exits RC and its stderr matches the
# extended regular expression PATTERN.
expect() {
    name=$1 want=$2 pat=$3
    shift 3
    bounded "$@"
    if [ "$rc" -ne "$want" ]; then
        bad "$name: exit $rc, expected $want"
        sed 's/^/    /' "$W/err" | head -5
    elif [ -n "$pat" ] && ! grep -Eq -- "$pat" "$W/err"; then
        bad "$name: stderr does not match /$pat/"
        sed 's/^/    /' "$W/err" | head -5
    else
        ok "$name"
    fi
}

# same NAME FILE COPY: FILE still has COPY's bytes.
same() {
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1"; fi
}

# ---- 1. an output that is an input or another output --------------------------
cp "$CASES/uses_lib.amp" "$CASES/lib.amp" "$W/" && cp "$W/uses_lib.amp" "$W/uses_lib.orig" &&
    cp "$W/lib.amp" "$W/lib.orig"
expect "-o the input is refused" 2 "the output uses_lib.amp is the input" "$AMPC" uses_lib.amp -o uses_lib.amp
same "-o the input: the input is intact" "$W/uses_lib.amp" "$W/uses_lib.orig"
expect "--header=the input is refused" 2 "the header uses_lib.amp is the input" \
    "$AMPC" uses_lib.amp -o x.c --header=uses_lib.amp
expect "-MF the input is refused" 2 "the depfile uses_lib.amp is the input" "$AMPC" uses_lib.amp -o x.c -MF uses_lib.amp
same "-MF the input: the input is intact" "$W/uses_lib.amp" "$W/uses_lib.orig"
expect "an output that is an import is refused" 2 "the header lib.amp is the input lib.amp" \
    "$AMPC" uses_lib.amp -o x.c --header=lib.amp
same "an output that is an import: the import is intact" "$W/lib.amp" "$W/lib.orig"
ln -f "$W/lib.amp" "$W/hardlink.amp"
expect "an output that is a hard link to an import is refused" 2 "is the input" \
    "$AMPC" uses_lib.amp -o hardlink.amp
expect "--header equal to -o is refused" 2 "the output and the header are the same file" \
    "$AMPC" uses_lib.amp -o y.c --header=./y.c
expect "-MF equal to the header is refused" 2 "the header and the depfile are the same file" \
    "$AMPC" uses_lib.amp -o y.c -MF y.h
expect "--dot-params without --emit=dot is refused" 2 "--dot-params applies to --emit=dot only" \
    "$AMPC" uses_lib.amp -o x.c --dot-params
if [ -e "$W/x.c" ] || [ -e "$W/y.c" ]; then bad "a refused compilation writes no output"; else ok "a refused compilation writes no output"; fi
expect "-o /dev/null --header=/dev/null is allowed" 0 "" "$AMPC" uses_lib.amp -o /dev/null --header=/dev/null

# ---- 3. loops: every iteration counts, empty bodies too ----------------------
G=$ROOT/tests/golden
expect "for 0..2^63-1 with an empty body stops at once" 1 "^err_for_iteration_limit.amp:5:12: error: this loop runs" \
    sh -c "cd '$G' && exec '$AMPC' err_for_iteration_limit.amp -o '$W/x.c'"
expect "nested empty loops are counted" 1 "^err_for_iteration_limit_nested.amp:5:14: error: this loop runs" \
    sh -c "cd '$G' && exec '$AMPC' err_for_iteration_limit_nested.amp -o '$W/x.c'"
printf 'model M(B) {\n  input x: f32[B, 4]\n  for i in 0..1000000000 { }\n  output x\n}\n' >"$W/for_1e9.amp"
expect "for 0..10^9 with an empty body stops at once" 1 "for_1e9.amp:3:12: error: this loop runs 1000000000 times" \
    "$AMPC" for_1e9.amp -o x.c

# ---- 6. a NUL byte is an error in the model, located -------------------------
printf 'model M(B) {\n  input x: f32[B]\n  y = x\000\n  output y\n}\n' >"$W/nul.amp"
expect "a NUL byte: exit 1 at its line and column" 1 "^nul.amp:3:8: error: a NUL byte" "$AMPC" nul.amp -o x.c
expect "a NUL byte on standard input: exit 1 at its line and column" 1 "^<stdin>:3:8: error: a NUL byte" \
    sh -c "exec '$AMPC' - -o x.c <nul.amp"
printf 'import "nul.amp"\nmodel N(B) {\n  input x: f32[B]\n  output x\n}\n' >"$W/imports_nul.amp"
expect "a NUL byte in an import: exit 1 at its line and column" 1 "^nul.amp:3:8: error: a NUL byte" \
    "$AMPC" imports_nul.amp -o x.c

# ---- 16. an import of a directory or a device ---------------------------------
expect "an import of a directory says it is one" 1 "^err_import_directory.amp:2:8: error: cannot import '../golden': ../golden is a directory" \
    sh -c "cd '$G' && exec '$AMPC' err_import_directory.amp -o '$W/x.c'"
printf 'import "/dev/zero"\nmodel N(B) {\n  input x: f32[B]\n  output x\n}\n' >"$W/imports_dev.amp"
expect "an import of a device is refused unread" 1 "^imports_dev.amp:1:8: error: cannot import '/dev/zero': /dev/zero is not a regular file" \
    "$AMPC" imports_dev.amp -o x.c

# ---- 8. control bytes from the source never reach the terminal raw ------------
# clean NAME: the last case's stderr holds no control byte but newline and tab
clean() {
    if tr -d '\n\t' <"$W/err" | LC_ALL=C grep -q '[[:cntrl:]]'; then bad "$1"; else ok "$1"; fi
}
printf 'import "\033]0;owned\007"\nmodel N(B) {\n  input x: f32[B]\n  output x\n}\n' >"$W/escapes.amp"
expect "an escape sequence in an import's name is shown escaped" 1 "cannot find '.x1b\\]0;owned.x07'" \
    "$AMPC" escapes.amp -o x.c
clean "an escape sequence in an import's name: no raw control byte on stderr"
printf 'model N(B) {\n  input x: f32[B]\n  y = q\007 + x\n  output y\n}\n' >"$W/bel.amp"
expect "a BEL in the source is shown escaped" 1 "^bel.amp:3:8: error: invalid character" "$AMPC" bel.amp -o x.c
clean "a BEL in the source: no raw control byte on stderr"

# ---- 9. a failed write on standard output is reported (exit 3) ---------------
# fresh copies: on a compiler that overwrites its input, section 1 ruined them
cp "$CASES/uses_lib.amp" "$CASES/lib.amp" "$W/"
if [ -w /dev/full ]; then
    expect "-M > /dev/full: exit 3 with a message" 3 "cannot write to standard output" \
        sh -c "exec '$AMPC' uses_lib.amp -M >/dev/full"
    expect "--dump=lower > /dev/full: exit 3 with a message" 3 "cannot write to standard output" \
        sh -c "exec '$AMPC' uses_lib.amp --dump=lower -o dump.c >/dev/full"
    if [ -e "$W/dump.c" ]; then bad "--dump=lower > /dev/full writes no output"; else ok "--dump=lower > /dev/full writes no output"; fi
    expect "--explain > /dev/full: exit 3 with a message" 3 "cannot write to standard output" \
        sh -c "exec '$AMPC' uses_lib.amp --explain >/dev/full"
    expect "-o - > /dev/full: exit 3 with a message" 3 "cannot write to standard output" \
        sh -c "exec '$AMPC' uses_lib.amp -o - >/dev/full"
else
    echo "skip /dev/full cases: no writable /dev/full"
fi

# ---- 10. file names in #line and comments ------------------------------------
# A newline, a quote, a backslash, '?' and an ESC in the model's name: under -g
# the emitted C still compiles warning-free and holds no raw control byte.
odd="$W/a
b\"?\\c$(printf '\033').amp"
cp "$CASES/lib_user.amp" "$odd"
expect "a model file named with a newline compiles under -g" 0 "" "$AMPC" -g "$odd" -o odd.c
if cc -std=c99 -Wall -Wextra -pedantic -Werror -I"$ROOT/runtime/include" -c -o /dev/null "$W/odd.c" 2>"$W/err"; then
    ok "its #line directives and comments compile warning-free"
else
    bad "its #line directives and comments compile warning-free"
    sed 's/^/    /' "$W/err" | head -5
fi
if tr -d '\n\t' <"$W/odd.c" | LC_ALL=C grep -q '[[:cntrl:]]'; then bad "no raw control byte in the emitted C"; else ok "no raw control byte in the emitted C"; fi
expect "a header name that #include cannot hold is refused" 2 "cannot stand in #include" \
    "$AMPC" -g "$odd"

# ---- 5. huge inputs stop early; out of memory is exit 3 ---------------------
yes '  y = relu(x)' | head -n 400000 >"$W/huge_body.amp"
{ printf 'model M(B) {\n  input x: f32[B]\n'; cat "$W/huge_body.amp"; printf '  output x\n}\n'; } >"$W/huge.amp"
expect "a 5 MB model stops at the source limit, located" 1 "^huge.amp:[0-9]+:[0-9]+: error: the model's sources pass 4 MiB" \
    "$AMPC" huge.amp -o x.c
expect "an endless standard input (yes model) stops at the source limit" 1 "^<stdin>:[0-9]+:[0-9]+: error: the model's sources pass" \
    sh -c "yes model | exec '$AMPC' - -o x.c"
# ulimit -v inside: the compiler, not the shell, must meet the limit
expect "out of memory: exit 3 with a message" 3 "^ampc: error: out of memory" \
    sh -c "ulimit -v 60000 && exec '$AMPC' '$ROOT/tests/fuzz/crashers/resolve-lookup-quadratic-timeout.amp' -o x.c"

# ---- the PyTorch syntax: sizes from the source stay bounded ---------------------
printf 'model M(B) {\n  input x: f32[B, 1000000000]\n  a, b = x.split(1, dim=1)\n  output a\n}\n' >"$W/split_1e9.amp"
expect "split into 10^9 parts stops at once" 1 "split_1e9.amp:3:10: error: split\(\) would give more than 4096 tensors" \
    "$AMPC" split_1e9.amp -o x.c
printf 'model M(B) {\n  input x: f32[B, 4]\n  y = x * (2 ** 1000000000000000000 + 1 ** 1000000000000000000 + 0 ** 1000000000000000000)\n  output y\n}\n' >"$W/pow_huge.amp"
expect "2 ** 10^18 of compile-time integers overflows at once" 1 "pow_huge.amp:3:12: error: this compile-time integer overflows 64 bits" \
    "$AMPC" pow_huge.amp -o x.c
awk 'BEGIN { printf "model M(B) {\n  input x: f32[B, 4]\n  y = x[:"; for (i = 0; i < 200000; i++) printf ", None"; printf "]\n  output y\n}\n" }' >"$W/none_200k.amp"
expect "200,000 new axes are one error" 1 "none_200k.amp:3:7: error: a tensor can have at most 8 dimensions" \
    "$AMPC" none_200k.amp -o x.c
awk 'BEGIN { printf "model M(B) {\n  input x: f32[B, 4, 8, 8]\n  y = max_pool2d(x, ["; for (i = 0; i < 200000; i++) printf "%s2", i ? ", " : ""; printf "])\n  output y\n}\n" }' >"$W/list_200k.amp"
expect "a list of 200,000 equal ints is read in linear time" 0 "" "$AMPC" list_200k.amp -o x.c

# ---- 4. weights that are not a regular file are refused unread ----------------
# (each would read without end, or block: bounded() turns that into a failure)
for dev in /dev/zero /dev/urandom /; do
    expect "--embed-weights=$dev is refused unread" 1 "--embed-weights $dev: the weights path is not a regular file" \
        "$AMPC" "$CASES/lib_user.amp" -o x.c --embed-weights="$dev"
done
rm -f "$W/fifo.safetensors" && mkfifo "$W/fifo.safetensors"
expect "--embed-weights=a FIFO without a writer is refused, not waited on" 1 "the weights path is not a regular file" \
    "$AMPC" "$CASES/lib_user.amp" -o x.c --embed-weights=fifo.safetensors
# a valid header naming 32 bytes, then 8 GiB of holes: refused from the size
printf '\100\000\000\000\000\000\000\000{"w":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}       ' >"$W/sparse.safetensors"
head -c 32 /dev/zero >>"$W/sparse.safetensors"
truncate -s 8G "$W/sparse.safetensors" 2>/dev/null || dd if=/dev/zero of="$W/sparse.safetensors" bs=1 count=1 seek=8589934591 2>/dev/null
expect "--embed-weights of 8 GiB past what the header names: refused unread" 1 "tensor data offsets overlap, leave gaps or do not cover the data" \
    "$AMPC" "$CASES/lib_user.amp" -o x.c --embed-weights=sparse.safetensors
rm -f "$W/sparse.safetensors"

# ---- 2. a .c beside a stale .h fails to compile --------------------------------
CFLAGS_EMIT="-std=c99 -Wall -Wextra -Wtype-limits -pedantic -Werror -I$ROOT/runtime/include"
mkdir -p "$W/pair_old" "$W/pair_new"
printf 'model Pair(B) {\n  input x: f32[B, 4]\n  param w: f32[2, 4]\n  y = linear(x, w)\n  output y\n}\n' >"$W/pair.amp"
expect "pair: the old model compiles" 0 "" "$AMPC" pair.amp -o pair_old/pair.c
printf 'model Pair(B) {\n  input x: f32[B, 4]\n  param w: f32[3, 4]\n  param b: f32[3]\n  y = linear(x, w, b)\n  output y\n}\n' >"$W/pair.amp"
expect "pair: the new model compiles" 0 "" "$AMPC" pair.amp -o pair_new/pair.c
if cc $CFLAGS_EMIT -c -o /dev/null "$W/pair_new/pair.c" 2>"$W/err"; then
    ok "pair: a .c with its own .h compiles"
else
    bad "pair: a .c with its own .h compiles"
    sed 's/^/    /' "$W/err" | head -5
fi
cp "$W/pair_old/pair.h" "$W/pair_new/pair.h"
if cc $CFLAGS_EMIT -c -o /dev/null "$W/pair_new/pair.c" 2>"$W/err"; then
    bad "pair: the new .c beside the old .h fails to compile"
elif grep -q "error: #error \"the header included is not the one generated with this file" "$W/err"; then
    ok "pair: the new .c beside the old .h fails to compile, saying why"
else
    bad "pair: the new .c beside the old .h fails at the #error, not later"
    sed 's/^/    /' "$W/err" | head -5
fi

# ---- a policy file's sources reach the C only as comment text ---------------
# ("*/" would end the comment and let the file inject C; "/*" warns; ESC
# would reach a reader's terminal)
printf 'target tpu\nlow bf16\nallow bf16\nlinear lower_precision_fp evil */ int x = 1; /* \033[31m\n' >"$W/evil.policy"
expect "a policy source with */ and ESC compiles" 0 "" "$AMPC" "$ROOT/examples/mlp.amp" -t tpu --policy=evil.policy -o evil.c
if cc $CFLAGS_EMIT -c -o /dev/null "$W/evil.c" 2>"$W/err" && ! grep -q "$(printf '\033')" "$W/evil.c" "$W/evil.h" &&
    grep -q 'rules from: evil \* / int x = 1; / \* \\x1b\[31m' "$W/evil.c"; then
    ok "a policy source is comment text: */ split, ESC shown as \\x1b, the C compiles with -Werror"
else
    bad "a policy source is comment text: */ split, ESC shown as \\x1b, the C compiles with -Werror"
    sed 's/^/    /' "$W/err" | head -5
fi

# ---- 11. zero-size parameters: the emitted C is warning-free -----------------
printf 'model Empty(B) {\n  input x: f32[B, 0]\n  param w: f32[0]\n  param v: f32[3, 0]\n  y = x + w\n  output y\n}\n' >"$W/empty.amp"
expect "zero-size parameters compile" 0 "" "$AMPC" empty.amp -o empty.c
if cc $CFLAGS_EMIT -c -o /dev/null "$W/empty.c" 2>"$W/err"; then
    ok "zero-size parameters: gcc -Wall -Wextra -pedantic -Werror accepts the C"
else
    bad "zero-size parameters: gcc -Wall -Wextra -pedantic -Werror accepts the C"
    sed 's/^/    /' "$W/err" | head -5
fi
printf 'model EmptyTrain(B) {\n  input x: f32[B, 0]\n  param w: f32[0]\n  y = x + w\n  loss = sum(y)\n  output loss\n  minimize loss\n  train {\n    optimizer = sgd(lr=0.1)\n  }\n}\n' >"$W/empty_train.amp"
expect "zero-size trainable parameters compile" 0 "" "$AMPC" empty_train.amp -o empty_train.c
if cc $CFLAGS_EMIT -c -o /dev/null "$W/empty_train.c" 2>"$W/err"; then
    ok "zero-size trainable parameters: gcc -Werror accepts the training step"
else
    bad "zero-size trainable parameters: gcc -Werror accepts the training step"
    sed 's/^/    /' "$W/err" | head -5
fi

# ---- 12. <prefix>_arena_bytes saturates, UBSan-clean up to INT64_MAX ---------
# (tests/hostile/arena_bytes.c says what it checks)
LIBAMPRT=$(cd "$BUILD" && pwd)/libamprt.a
expect "arena.amp compiles" 0 "" "$AMPC" "$CASES/arena.amp" -o arena.c
if cc $CFLAGS_EMIT -O1 -fsanitize=undefined -fno-sanitize-recover=all -I"$W" -o "$W/arena_bytes" \
        "$ROOT/tests/hostile/arena_bytes.c" "$W/arena.c" "$LIBAMPRT" -lm -lpthread 2>"$W/err"; then
    expect "arena bytes: exact in range, SIZE_MAX past it, _forward refuses (UBSan)" 0 "" "$W/arena_bytes"
else
    bad "arena bytes: the UBSan test program builds"
    sed 's/^/    /' "$W/err" | head -5
fi

# ---- 15. an output is replaced only when its bytes change ------------------------
# Old time stamps on the outputs, then compile again: unchanged bytes keep
# them (Ninja's restat then rebuilds nothing downstream); a real change
# replaces the file.
mkdir -p "$W/restat" && cp "$CASES/uses_lib.amp" "$CASES/lib.amp" "$W/restat/"
( cd "$W/restat" && "$AMPC" uses_lib.amp -o m.c -MD ) >/dev/null 2>&1
touch -t 200001010000 "$W/restat/m.c" "$W/restat/m.h" "$W/restat/m.d"
touch -t 200101010000 "$W/restat/stamp"
expect "restat: the same compilation again" 0 "" sh -c "cd restat && exec '$AMPC' uses_lib.amp -o m.c -MD"
if [ "$W/restat/m.c" -nt "$W/restat/stamp" ] || [ "$W/restat/m.h" -nt "$W/restat/stamp" ] ||
    [ "$W/restat/m.d" -nt "$W/restat/stamp" ]; then
    bad "restat: unchanged outputs keep their time stamps"
else
    ok "restat: unchanged outputs keep their time stamps"
fi
printf '# a comment-only edit\n' >>"$W/restat/lib.amp"
expect "restat: a comment-only edit of an import" 0 "" sh -c "cd restat && exec '$AMPC' uses_lib.amp -o m.c -MD"
if [ "$W/restat/m.c" -nt "$W/restat/stamp" ]; then
    bad "restat: a comment-only edit of an import leaves m.c alone"
else
    ok "restat: a comment-only edit of an import leaves m.c alone"
fi
printf '# a comment in the model: its hash is in the provenance comment\n' >>"$W/restat/uses_lib.amp"
expect "restat: an edit of the model" 0 "" sh -c "cd restat && exec '$AMPC' uses_lib.amp -o m.c -MD"
if [ "$W/restat/m.c" -nt "$W/restat/stamp" ] && [ "$W/restat/m.h" -nt "$W/restat/stamp" ]; then
    ok "restat: changed outputs are replaced"
else
    bad "restat: changed outputs are replaced"
fi

# ---- 13. checkpoints: every scalar validated, the data checksummed ---------------
# (tests/hostile/checkpoint.c says what it checks, killed saves included)
mkdir -p "$W/checkpoint"
expect "resume.amp compiles" 0 "" "$AMPC" "$ROOT/tests/train/resume.amp" -t gpu -o checkpoint/resume.c
if cc $CFLAGS_EMIT -D_GNU_SOURCE -O1 -fsanitize=undefined -fno-sanitize-recover=all -I"$W/checkpoint" \
        -o "$W/checkpoint/check" "$ROOT/tests/hostile/checkpoint.c" "$W/checkpoint/resume.c" "$LIBAMPRT" -lm -lpthread \
        2>"$W/err"; then
    expect "checkpoints: bad scalars refused, bit flips caught, old format loads, killed saves clean up" 0 "" \
        sh -c "cd checkpoint && exec ./check"
    [ "$rc" -eq 0 ] || sed 's/^/    /' "$W/out" | head -10
else
    bad "checkpoints: the test program builds"
    sed 's/^/    /' "$W/err" | head -5
fi

# ---- 14. temporaries of killed runs do not pile up ----------------------------------
# A killed ampc leaves at most "<output>.tmp", which the next run reuses.
printf 'half-written' >"$W/restat/m.c.tmp"
printf 'half-written' >"$W/restat/m.h.tmp"
printf '# another edit\n' >>"$W/restat/uses_lib.amp"
expect "stale temporaries: the next compilation succeeds" 0 "" sh -c "cd restat && exec '$AMPC' uses_lib.amp -o m.c"
left=$(cd "$W/restat" && ls | grep -c '\.tmp')
if [ "$left" -eq 0 ]; then ok "stale temporaries: reused and gone"; else bad "stale temporaries: reused and gone ($left left)"; fi
i=0
while [ $i -lt 10 ]; do
    printf '# edit %s\n' "$i" >>"$W/restat/uses_lib.amp"
    (cd "$W/restat" && exec "$AMPC" uses_lib.amp -o m.c) >/dev/null 2>&1 &
    pid=$!
    sleep 0.0$i 2>/dev/null || true
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    i=$((i + 1))
done
left=$(cd "$W/restat" && ls | grep -c '\.tmp')
if [ "$left" -le 2 ]; then ok "10 killed compilations leave at most m.c.tmp and m.h.tmp ($left)"; else bad "10 killed compilations leave at most m.c.tmp and m.h.tmp ($left left)"; fi

# ---- the fuzzers' corpora -------------------------------------------------------
# Each seed and saved crasher compiles or fails with a documented code, within
# the bounds (the weights files through --embed-weights).
for f in tests/fuzz/corpus/frontend/* tests/fuzz/crashers/*; do
    [ -f "$f" ] || continue
    bounded "$AMPC" "$ROOT/$f" -o "$W/corpus.c" -I "$ROOT/tests/fuzz/imports"
    case $rc in
        0|1|2|3) corpus_ok=$((${corpus_ok:-0} + 1)) ;;
        *) bad "$f: exit $rc"; sed 's/^/    /' "$W/err" | head -3 ;;
    esac
done
for f in tests/fuzz/corpus/safetensors/* tests/fuzz/crashers-safetensors/*; do
    [ -f "$f" ] || continue
    bounded "$AMPC" "$CASES/lib_user.amp" -o "$W/corpus.c" --embed-weights="$ROOT/$f"
    case $rc in
        0|1|2|3) corpus_ok=$((${corpus_ok:-0} + 1)) ;;
        *) bad "$f (--embed-weights): exit $rc"; sed 's/^/    /' "$W/err" | head -3 ;;
    esac
done
ok "${corpus_ok:-0} fuzz corpus files exit 0-3 within the bounds"

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
