#!/bin/sh
# binary_size.sh BUILD: what the MLP example (examples/mlp.amp for tpu,
# with its driver examples/mlp_main.c) adds to an empty program, both
# linked statically and stripped, the model's C and the driver compiled
# with -ffunction-sections -fdata-sections and linked with
# -Wl,--gc-sections (docs/runtime.md, "Small binaries"):
#
#   fast      BUILD/bare-noavx512/libamprt.a  (make BARE=1 NO_AVX512=1):
#             the fast x86 kernels of the avx2 set (elsewhere the
#             architecture's sets)
#   all sets  BUILD/bare/libamprt.a      (make BARE=1): every set of the
#             architecture (x86: avx2, avx512, avx512bf16)
#   ref       BUILD/bare-ref/libamprt.a  (make BARE=1 REF_ONLY=1)
#   threaded  BUILD/libamprt.a           (the default runtime; reported
#             against an empty program that starts one thread too, since
#             glibc's static pthread_create alone is some 78 KB)
#
# Fails when fast or all sets add more than FAST_MAX bytes (64 KB) or ref
# more than REF_MAX (16 KB) (threaded is reported, not checked: it holds
# glibc's mutex and condition-variable code for the pool, some 10 KB more
# than the one-thread program), when a fast program lacks a set's kernel
# for one of the model's products (the per-kernel dispatch dropped it) or
# holds a kernel or a convolution hook the model does not call (the
# every-set program: gemm_relu_backward's small-product epilogue either),
# or when a program prints other numbers than the default runtime's with
# the same kernels.
#
# Then the program a runtime without files (BARE=1) is for: bench/bare_mlp.c
# and the model's C compiled with -DAMPRT_NO_STDIO and linked with
# BUILD/bare/libamprt.a without --gc-sections (whole objects), dynamically,
# so that `nm -u` lists what it asks of libc: it must run, ask for no stdio
# stream or file function, and its zero-filled data (the drivers' per-slot
# buffers, one slot without threads) must stay under BARE_BSS_MAX (4 MB).
# Needs BUILD/ampc and the four libraries (make bench-size builds them).
set -eu
BUILD=${1:-build}
CC=${CC:-cc}
FAST_MAX=${FAST_MAX:-65536}
REF_MAX=${REF_MAX:-16384}
BARE_BSS_MAX=${BARE_BSS_MAX:-4194304}
OUT=$BUILD/size
mkdir -p "$OUT"
fail=0

CFLAGS="-std=c99 -O2 -ffunction-sections -fdata-sections"
LDFLAGS="-static -Wl,--gc-sections"

printf 'int main(void) { return 0; }\n' > "$OUT/empty.c"
cat > "$OUT/empty_thread.c" <<'C'
#include <pthread.h>
static void *run(void *arg) { return arg; }
int main(void)
{
    pthread_t t;
    return pthread_create(&t, 0, run, 0) != 0 || pthread_join(t, 0) != 0;
}
C
$CC $CFLAGS $LDFLAGS -s -o "$OUT/empty" "$OUT/empty.c"
$CC $CFLAGS $LDFLAGS -s -o "$OUT/empty_thread" "$OUT/empty_thread.c" -lpthread
"$BUILD/ampc" examples/mlp.amp -t tpu -o "$OUT/mlp.c"

size_of() { wc -c < "$1" | tr -d ' '; }

# link NAME LIB LIBS...: the MLP program on LIB, stripped (NAME) and not
# (NAME.syms, for nm)
link() {
    name=$1 lib=$2
    shift 2
    $CC $CFLAGS -Iruntime/include -I"$OUT" $LDFLAGS -o "$OUT/$name.syms" examples/mlp_main.c "$OUT/mlp.c" "$lib" "$@"
    cp "$OUT/$name.syms" "$OUT/$name"
    strip "$OUT/$name"
}

link mlp_fast "$BUILD/bare-noavx512/libamprt.a" -lm
link mlp_all "$BUILD/bare/libamprt.a" -lm
link mlp_ref "$BUILD/bare-ref/libamprt.a" -lm
link mlp_threaded "$BUILD/libamprt.a" -lm -lpthread
# the default runtime, dynamically linked to libc: the numbers to match
$CC -std=c99 -O2 -Iruntime/include -I"$OUT" -o "$OUT/mlp_check" examples/mlp_main.c "$OUT/mlp.c" \
    "$BUILD/libamprt.a" -lm -lpthread

empty=$(size_of "$OUT/empty")
empty_thread=$(size_of "$OUT/empty_thread")
fast=$(size_of "$OUT/mlp_fast")
all=$(size_of "$OUT/mlp_all")
ref=$(size_of "$OUT/mlp_ref")
threaded=$(size_of "$OUT/mlp_threaded")
added_fast=$((fast - empty))
added_all=$((all - empty))
added_ref=$((ref - empty))
added_threaded=$((threaded - empty_thread))

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $($CC --version | head -n 1), $(ldd --version 2>&1 | head -n 1)"
printf '%-34s %9s %9s %9s\n' "program (static, stripped)" bytes added limit
printf '%-34s %9d\n' "empty" "$empty"
printf '%-34s %9d\n' "empty, one thread" "$empty_thread"
printf '%-34s %9d %9d %9d\n' "mlp, fast kernels (avx2 set)" "$fast" "$added_fast" "$FAST_MAX"
printf '%-34s %9d %9d %9d\n' "mlp, every set (BARE=1)" "$all" "$added_all" "$FAST_MAX"
printf '%-34s %9d %9d %9d\n' "mlp, reference (BARE=1 REF_ONLY=1)" "$ref" "$added_ref" "$REF_MAX"
printf '%-34s %9d %9d %9s\n' "mlp, default runtime (threads)" "$threaded" "$added_threaded" "-"

for pair in "fast:$added_fast" "every-set:$added_all"; do
    if [ "${pair#*:}" -gt "$FAST_MAX" ]; then
        echo "FAIL: the ${pair%%:*} MLP program adds ${pair#*:} bytes (limit $FAST_MAX)"
        fail=1
    fi
done
if [ "$added_ref" -gt "$REF_MAX" ]; then
    echo "FAIL: the reference MLP program adds $added_ref bytes (limit $REF_MAX)"
    fail=1
fi

# The sets' own kernels for the model's products are in the fast program
# (x86: each set's; elsewhere, whatever sets the architecture has), and
# none of a kernel the model does not call.
has() { nm "$OUT/$1.syms" | grep -q " $2\$"; }
case $(uname -m) in
x86_64 | i?86)
    for k in amp_isa_avx2_linear_ex_bf16 amp_isa_avx2_cast_f32_bf16; do
        has mlp_fast "$k" || { echo "FAIL: $k is not in the fast program"; fail=1; }
    done
    for k in amp_isa_avx2_linear_ex_bf16 amp_isa_avx512_linear_ex_bf16 amp_isa_avx512bf16_linear_ex_bf16; do
        has mlp_all "$k" || { echo "FAIL: $k is not in the every-set program"; fail=1; }
    done
    ;;
esac
for name in mlp_fast mlp_all; do
    for absent in amp_isa_avx2_conv_bf16 amp_ref_conv_bf16 amp_isa_avx512_sum_f32 amp_avx2_conv_post \
        amp_avx512_conv_post small_epilogue_rbw; do
        if has "$name" "$absent"; then
            echo "FAIL: $absent, which the model does not call, is in $name"
            fail=1
        fi
    done
done

# Same numbers as the default runtime with the same kernels (the first
# line names the set).
for isa in auto ref avx2; do
    AMPRT_ISA=$isa "$OUT/mlp_check" 4 | tail -n +2 > "$OUT/expect.$isa"
done
check_same() {
    name=$1 isa=$2
    if ! AMPRT_ISA=$isa "$OUT/$name" 4 | tail -n +2 | cmp -s - "$OUT/expect.$isa"; then
        echo "FAIL: $name (AMPRT_ISA=$isa) prints other numbers than the default runtime"
        fail=1
    fi
}
check_same mlp_fast avx2
check_same mlp_all auto
check_same mlp_fast ref
check_same mlp_all ref
check_same mlp_ref ref
check_same mlp_threaded auto
# A BARE program, whole objects: no stdio, no files.
$CC -std=c99 -O2 -DAMPRT_NO_STDIO -Iruntime/include -I"$OUT" -o "$OUT/mlp_bare" bench/bare_mlp.c "$OUT/mlp.c" \
    "$BUILD/bare/libamprt.a" -lm || { echo "FAIL: the BARE program does not link without --gc-sections"; fail=1; }
if [ -x "$OUT/mlp_bare" ]; then
    "$OUT/mlp_bare" || { echo "FAIL: the BARE program failed"; fail=1; }
    stdio=$(nm -u "$OUT/mlp_bare" | awk '{print $NF}' | sed 's/@.*//' |
        grep -E '^(_IO_.*|f(open|open64|dopen|close|read|write|printf|puts|putc|flush|gets|seek|tell|sync|stat|stat64)|v?printf|vfprintf|puts|putchar|perror|std(err|out|in)|open|open64|openat|read|write|fstat|fstat64|stat|rename|unlink|mkstemp|flock)$' || true)
    if [ -n "$stdio" ]; then
        echo "FAIL: the BARE program asks for stdio or files:" $stdio
        fail=1
    fi
    bss=$(size "$OUT/mlp_bare" | awk 'NR == 2 {print $3}')
    echo "BARE program (no --gc-sections): zero-filled data $bss bytes (limit $BARE_BSS_MAX), no stdio"
    if [ "$bss" -gt "$BARE_BSS_MAX" ]; then
        echo "FAIL: the BARE program's zero-filled data is $bss bytes (limit $BARE_BSS_MAX)"
        fail=1
    fi
fi
[ "$fail" = 0 ] && echo "binary size: ok"
exit "$fail"
