#!/bin/sh
# run.sh BUILD: tests of make install / make uninstall and of ampc in
# outside Make and CMake builds (docs/build-integration.md).
#
# Installs the tree built in BUILD twice, staged (DESTDIR) and directly
# (PREFIX), both into a temporary directory; checks the installed files;
# builds examples/make (pkg-config, depfiles) and examples/cmake
# (find_package, ampc_add_model; with Make and, if installed, Ninja)
# against the installed prefix as an outside project would, in copies of
# their own; runs them; checks that a build with nothing changed does
# nothing, that touching the model rebuilds the model and only what depends
# on it, and that a model with an error fails the build with ampc's
# diagnostic and leaves the generated files as they were; runs
# docs/pytorch.md's workflow from the installed torch2amp, ampc --emit=main
# and libamprt (tests/install/torch.sh; skipped without torch); trains
# the digits example, saves it and deploys the checkpoint through
# --embed-weights and the loader, each as accurate as the trained model
# (tests/install/deploy.sh, about 5 s); then uninstalls.
#
# Needs make, a C compiler, pkg-config, cmake (3.20+) and groff (for the
# man page); ninja is optional.  Prints one line per check and last
# "N passed, M failed".  KEEP=1 keeps the temporary directory.
set -u
BUILD=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2

# An outside project's builds must not inherit this tree's make state.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS DESTDIR PREFIX \
    AMPC TARGET MODEL CFLAGS LDFLAGS CMAKE_GENERATOR CMAKE_PREFIX_PATH PKG_CONFIG_PATH
MAKE=${MAKE:-make}
CMAKE=${CMAKE:-cmake}

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
# bad DESCRIPTION [LOG]: a failed check, with the end of its log
bad() {
    fail=$((fail + 1))
    echo "FAIL $1"
    if [ -n "${2:-}" ] && [ -f "$2" ]; then
        tail -n 25 "$2" | sed 's/^/     | /'
    fi
}
# check DESCRIPTION LOG COMMAND...: ok if COMMAND succeeds, its output in LOG
check() {
    desc=$1
    log=$2
    shift 2
    if "$@" > "$log" 2>&1; then ok "$desc"; else bad "$desc" "$log"; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ampc-install-test.XXXXXX") || exit 2
if [ "${KEEP:-}" = 1 ]; then
    echo "(keeping $tmp)"
else
    trap 'rm -rf "$tmp"' EXIT
    trap 'exit 130' INT TERM
fi

version=$(sed -n 's/^#define AMPC_VERSION "\([^"]*\)".*/\1/p' src/core/core.h)
major=${version%%.*}

# Newer-than tests need the clock to move past the last write.
tick() {
    sleep 1
    touch "$tmp/stamp"
}

# Every file and symlink under a directory, relative, sorted.
files_under() {
    (cd "$1" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort)
}

LC_ALL=C sort > "$tmp/expected" <<EOF
bin/ampc
bin/onnx2amp
bin/torch2amp
include/amprt.h
$(cd runtime/include && ls amprt/*.h | sed 's|^|include/|')
lib/cmake/ampc/ampcConfig.cmake
lib/cmake/ampc/ampcConfigVersion.cmake
lib/libamprt.a
lib/libamprt.so
lib/libamprt.so.$major
lib/libamprt.so.$version
lib/pkgconfig/amprt.pc
share/ampc/nn.amp
share/man/man1/ampc.1
EOF

# check_tree WHAT DIR: the installed files are exactly the expected ones
check_tree() {
    files_under "$2" > "$tmp/got" 2>&1
    if cmp -s "$tmp/expected" "$tmp/got"; then
        ok "$1: installs exactly the expected files"
    else
        diff "$tmp/expected" "$tmp/got" > "$tmp/tree.diff" 2>&1
        bad "$1: installs exactly the expected files (diff expected got)" "$tmp/tree.diff"
    fi
    lib=$2/lib
    if [ -f "$lib/libamprt.so.$version" ] && [ ! -L "$lib/libamprt.so.$version" ] &&
        [ -L "$lib/libamprt.so.$major" ] && [ "$(readlink "$lib/libamprt.so.$major")" = "libamprt.so.$version" ] &&
        [ -L "$lib/libamprt.so" ] && [ "$(readlink "$lib/libamprt.so")" = "libamprt.so.$version" ]; then
        ok "$1: libamprt.so and libamprt.so.$major link to libamprt.so.$version"
    else
        ls -l "$lib" > "$tmp/ls.log" 2>&1
        bad "$1: libamprt.so and libamprt.so.$major link to libamprt.so.$version" "$tmp/ls.log"
    fi
}

check_soname() {
    readelf -d "$1/lib/libamprt.so.$version" > "$tmp/readelf.log" 2>&1
    if grep -q "Library soname: \[libamprt.so.$major\]" "$tmp/readelf.log"; then
        ok "libamprt.so.$version has soname libamprt.so.$major"
    else
        bad "libamprt.so.$version has soname libamprt.so.$major" "$tmp/readelf.log"
    fi
}

# check_uninstall WHAT DIR MAKE-ARGS...: nothing of ampc's is left, and
# the files that were there besides are
check_uninstall() {
    what=$1
    dir=$2
    shift 2
    mkdir -p "$dir/bin" "$dir/lib/pkgconfig"
    echo other > "$dir/bin/other-tool"
    echo other > "$dir/lib/pkgconfig/other.pc"
    if "$MAKE" --no-print-directory BUILD="$BUILD" uninstall "$@" > "$tmp/uninstall.log" 2>&1; then
        ok "$what: make uninstall"
    else
        bad "$what: make uninstall" "$tmp/uninstall.log"
    fi
    files_under "$dir" > "$tmp/left" 2>&1
    printf 'bin/other-tool\nlib/pkgconfig/other.pc\n' > "$tmp/others"
    if cmp -s "$tmp/others" "$tmp/left" && [ ! -d "$dir/lib/cmake/ampc" ] && [ ! -d "$dir/share/ampc" ]; then
        ok "$what: uninstall removes every ampc file (and lib/cmake/ampc, share/ampc), and nothing else"
    else
        find "$dir" > "$tmp/left.log" 2>&1
        bad "$what: uninstall removes every ampc file (and lib/cmake/ampc, share/ampc), and nothing else" "$tmp/left.log"
    fi
}

for tool in "$MAKE" "$CMAKE" pkg-config readelf groff; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        bad "$tool is installed (sh scripts/install-deps.sh --test)"
    fi
done

# ---- a staged install: DESTDIR=stage PREFIX=/…/usr -------------------------

stage=$tmp/stage
sprefix=$tmp/usr
check "make install DESTDIR=… PREFIX=…" "$tmp/install-staged.log" \
    "$MAKE" --no-print-directory BUILD="$BUILD" install DESTDIR="$stage" PREFIX="$sprefix"
check_tree "staged" "$stage$sprefix"
if [ -e "$sprefix" ]; then bad "staged: nothing is written to PREFIX itself"; else ok "staged: nothing is written to PREFIX itself"; fi
if grep -rlF "$stage" "$stage" > "$tmp/grep.log" 2>&1; then
    bad "staged: no installed file records DESTDIR" "$tmp/grep.log"
else
    ok "staged: no installed file records DESTDIR"
fi
if grep -qx "prefix=$sprefix" "$stage$sprefix/lib/pkgconfig/amprt.pc" &&
    grep -qx "Version: $version" "$stage$sprefix/lib/pkgconfig/amprt.pc"; then
    ok "staged: amprt.pc has prefix=PREFIX and Version: $version"
else
    bad "staged: amprt.pc has prefix=PREFIX and Version: $version" "$stage$sprefix/lib/pkgconfig/amprt.pc"
fi
check_soname "$stage$sprefix"
"$stage$sprefix/bin/ampc" --version > "$tmp/version.log" 2>&1
if [ "$(cat "$tmp/version.log")" = "ampc $version" ]; then
    ok "installed ampc --version says ampc $version (src/core/core.h)"
else
    bad "installed ampc --version says ampc $version (src/core/core.h)" "$tmp/version.log"
fi

man=$stage$sprefix/share/man/man1/ampc.1
# -P-cbou: plain text, without overstriking or escape sequences
if groff -man -Tutf8 -ww -P-cbou "$man" > "$tmp/man.txt" 2> "$tmp/man.log" && [ ! -s "$tmp/man.log" ] && grep -q "ampc $version" "$tmp/man.txt" &&
    (for s in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' FILES EXAMPLES 'SEE ALSO'; do
        grep -q "^$s\$" "$tmp/man.txt" || exit 1
    done) &&
    grep -q -- '-MD' "$tmp/man.txt" && grep -q -- '-MF' "$tmp/man.txt" && grep -q -- '-MT' "$tmp/man.txt" &&
    grep -q -- '-MP' "$tmp/man.txt"; then
    ok "man page renders without warnings (groff -man -ww), with its sections, the -M options and the version"
else
    cat "$tmp/man.log" >> "$tmp/man.txt"
    bad "man page renders without warnings (groff -man -ww), with its sections, the -M options and the version" "$tmp/man.txt"
fi

# ---- the example projects, copied out of the tree -----------------------------

src=$tmp/src
mkdir -p "$src/make" "$src/cmake"
cp examples/mlp.amp "$src/mlp.amp"
cp examples/make/Makefile examples/make/main.c examples/make/rng.c examples/make/rng.h "$src/make/"
cp examples/cmake/CMakeLists.txt examples/cmake/main.c examples/cmake/rng.c examples/cmake/rng.h "$src/cmake/"
model=$src/mlp.amp
cp "$model" "$tmp/mlp.amp.good"
# The same model with an unknown op in it.
sed 's/linear(h,/lineer(h,/' "$tmp/mlp.amp.good" > "$tmp/mlp.amp.bad"
if cmp -s "$tmp/mlp.amp.good" "$tmp/mlp.amp.bad"; then
    bad "test setup: examples/mlp.amp has the 'linear(h,' this test breaks"
fi
diag='mlp\.amp:[0-9][0-9]*:[0-9][0-9]*: error:'
# The same model with its layers in a file it imports: the build system
# knows that file only from ampc's depfile.  (Kept where no search path
# of the projects' would find it.)
mkdir -p "$tmp/models"
cat > "$tmp/models/layers.amp" <<'EOF'
# layers.amp: the block the test's mlp.amp imports
block Dense(x, d_in: int, d_out: int) {
  param weight: f32[d_out, d_in]
  param bias: f32[d_out]
  return linear(x, weight, bias)
}
EOF
cat > "$tmp/mlp.amp.imports" <<'EOF'
import "layers.amp"

model Mlp(B) {
  input x: f32[B, 64]
  input y: i64[B]
  module fc1 = Dense(64, 128)
  module fc2 = Dense(128, 10)
  autocast {
    h      = relu(fc1(x))
    logits = fc2(h)
    loss   = nll_loss(log_softmax(logits, dim=1), y)
  }
  output logits
  minimize loss
}
EOF

# runs LOG PROGRAM: PROGRAM runs and prints the loss, its output in LOG
runs() {
    "$2" > "$1" 2>&1 && grep -q '^loss ' "$1"
}

# check_imports WHAT GENERATED-C DEPFILE INDEPENDENT-OBJECT PROGRAM BUILD LOG:
# a model that imports a file, after the model's own checks.  BUILD is a
# function that runs the build with its output in the file $1.
check_imports() {
    what=$1
    c=$2
    dep=$3
    indep=$4
    prog=$5
    build=$6
    log=$7
    tick
    cp "$tmp/mlp.amp.imports" "$model"
    cp "$tmp/models/layers.amp" "$src/layers.amp"
    if $build "$log.imports.log" && grep -q 'layers\.amp' "$dep" 2>/dev/null &&
        runs "$log.imports.run" "$prog" && cmp -s "$log.imports.run" "$tmp/reference.run"; then
        ok "$what: a model importing layers.amp builds, its depfile lists layers.amp, the program prints the same"
    else
        cat "$dep" >> "$log.imports.log" 2>&1
        bad "$what: a model importing layers.amp builds, its depfile lists layers.amp, the program prints the same" "$log.imports.log"
    fi
    # ampc replaces an output only when its bytes change: a touch reruns it
    # and rebuilds nothing; an edit that moves the ops' source lines (named
    # in the emitted comments) rebuilds what depends on the model
    tick
    touch "$src/layers.amp"
    # (CMake's Makefile generator has no restat: it touches the other
    # outputs of a custom command after it, so dependents rebuild there)
    case $what in
    *Makefiles*) touch_ok() { ! [ "$c" -nt "$tmp/stamp" ]; } ;;
    *) touch_ok() { ! [ "$c" -nt "$tmp/stamp" ] && ! [ "$prog" -nt "$tmp/stamp" ] && [ -f "$indep" ] &&
                    ! [ "$indep" -nt "$tmp/stamp" ]; } ;;
    esac
    if $build "$log.imports-touch.log" && touch_ok; then
        ok "$what: touching the imported file leaves the unchanged outputs (and with restat what follows) alone"
    else
        bad "$what: touching the imported file leaves the unchanged outputs (and with restat what follows) alone" "$log.imports-touch.log"
    fi
    tick
    { echo "# moved down a line"; cat "$src/layers.amp"; } > "$tmp/layers.amp.edited" && cp "$tmp/layers.amp.edited" "$src/layers.amp"
    if $build "$log.imports-edit.log" && [ "$c" -nt "$tmp/stamp" ] && [ "$prog" -nt "$tmp/stamp" ] &&
        [ -f "$indep" ] && ! [ "$indep" -nt "$tmp/stamp" ]; then
        ok "$what: editing the imported file (known only from the depfile) reruns ampc, and rebuilds no more"
    else
        bad "$what: editing the imported file (known only from the depfile) reruns ampc, and rebuilds no more" "$log.imports-edit.log"
    fi
    tick
    cp "$tmp/mlp.amp.good" "$model"
    rm -f "$src/layers.amp"
    if $build "$log.imports-gone.log" && [ "$c" -nt "$tmp/stamp" ] && runs "$log.imports-gone.run" "$prog"; then
        ok "$what: dropping the import and deleting the imported file does not break the build"
    else
        bad "$what: dropping the import and deleting the imported file does not break the build" "$log.imports-gone.log"
    fi
}

cmake_build() {
    "$CMAKE" --build "$bdir" > "$1" 2>&1
}

# check_cmake WHAT PREFIX-PATH GENERATOR BUILD-DIR [full]: an outside CMake
# build of examples/cmake; with "full" also the rebuild checks.
check_cmake() {
    what=$1
    bdir=$4
    rm -rf "$bdir"
    if ! "$CMAKE" -G "$3" -S "$src/cmake" -B "$bdir" -DCMAKE_PREFIX_PATH="$2" > "$bdir.configure.log" 2>&1; then
        bad "$what: cmake configures examples/cmake (find_package(ampc), ampc_add_model)" "$bdir.configure.log"
        return
    fi
    ok "$what: cmake configures examples/cmake (find_package(ampc), ampc_add_model)"
    check "$what: cmake --build builds it" "$bdir.build.log" "$CMAKE" --build "$bdir"
    if runs "$bdir.run.log" "$bdir/mlp"; then
        ok "$what: the program runs"
    else
        bad "$what: the program runs" "$bdir.run.log"
    fi
    [ "${5:-}" = full ] || return 0

    gen=$bdir/ampc/mlp
    if grep -qF "$model" "$gen/mlp.d" 2>/dev/null; then
        ok "$what: ampc wrote the depfile the build reads (ampc/mlp/mlp.d names the model)"
    else
        bad "$what: ampc wrote the depfile the build reads (ampc/mlp/mlp.d names the model)" "$gen/mlp.d"
    fi

    tick
    "$CMAKE" --build "$bdir" > "$bdir.again.log" 2>&1
    rc=$?
    newer=$(find "$bdir" -type f -newer "$tmp/stamp" \( -name '*.c' -o -name '*.h' -o -name '*.o' -o -name '*.a' -o -name mlp \) -print)
    if [ $rc -eq 0 ] && [ -z "$newer" ] && ! grep -Eq 'Building|Linking|ampc:' "$bdir.again.log"; then
        ok "$what: a second build with nothing changed does nothing"
    else
        echo "rebuilt: $newer" >> "$bdir.again.log"
        bad "$what: a second build with nothing changed does nothing" "$bdir.again.log"
    fi

    # a touch reruns ampc, whose outputs keep their bytes and time stamps:
    # nothing after them rebuilds (Ninja's restat, make's own re-stat)
    tick
    touch "$model"
    "$CMAKE" --build "$bdir" > "$bdir.touch.log" 2>&1
    rc=$?
    rng_o=$(find "$bdir" -name 'rng.c.o')
    main_o=$(find "$bdir" -name 'main.c.o')
    # CMake's Makefile generator has no restat (it touches mlp.h, the custom
    # command's other output, after it): there only mlp.c keeps its stamp
    if [ "$3" = Ninja ]; then
        touched_ok() { ! [ "$gen/mlp.c" -nt "$tmp/stamp" ] && ! [ "$gen/mlp.h" -nt "$tmp/stamp" ] &&
                       ! [ "$main_o" -nt "$tmp/stamp" ] && ! [ "$bdir/mlp" -nt "$tmp/stamp" ]; }
    else
        touched_ok() { ! [ "$gen/mlp.c" -nt "$tmp/stamp" ]; }
    fi
    if [ $rc -eq 0 ] && touched_ok; then
        ok "$what: touching the model leaves the unchanged outputs (and with restat what follows) alone"
    else
        bad "$what: touching the model leaves the unchanged outputs (and with restat what follows) alone" "$bdir.touch.log"
    fi
    tick
    echo "# an edit" >> "$model"
    "$CMAKE" --build "$bdir" > "$bdir.edit.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ "$gen/mlp.c" -nt "$tmp/stamp" ] && [ "$gen/mlp.h" -nt "$tmp/stamp" ] &&
        [ "$main_o" -nt "$tmp/stamp" ] && [ "$bdir/mlp" -nt "$tmp/stamp" ] &&
        [ -n "$rng_o" ] && ! [ "$rng_o" -nt "$tmp/stamp" ]; then
        ok "$what: editing the model reruns ampc and rebuilds what includes mlp.h, not rng.c"
    else
        bad "$what: editing the model reruns ampc and rebuilds what includes mlp.h, not rng.c" "$bdir.edit.log"
    fi

    cp -p "$gen/mlp.c" "$tmp/mlp.c.before"
    cp -p "$gen/mlp.h" "$tmp/mlp.h.before"
    tick
    cp "$tmp/mlp.amp.bad" "$model"
    "$CMAKE" --build "$bdir" > "$bdir.bad.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then ok "$what: a model with an error fails the build"; else bad "$what: a model with an error fails the build" "$bdir.bad.log"; fi
    if grep -q "$diag" "$bdir.bad.log"; then
        ok "$what: the build output shows ampc's file:line:col: error: diagnostic"
    else
        bad "$what: the build output shows ampc's file:line:col: error: diagnostic" "$bdir.bad.log"
    fi
    if cmp -s "$gen/mlp.c" "$tmp/mlp.c.before" && cmp -s "$gen/mlp.h" "$tmp/mlp.h.before" &&
        ! [ "$gen/mlp.c" -nt "$tmp/stamp" ] && ! [ "$gen/mlp.h" -nt "$tmp/stamp" ]; then
        ok "$what: the failed build leaves the generated mlp.c and mlp.h untouched"
    else
        bad "$what: the failed build leaves the generated mlp.c and mlp.h untouched"
    fi
    tick
    cp "$tmp/mlp.amp.good" "$model"
    if "$CMAKE" --build "$bdir" > "$bdir.fixed.log" 2>&1 && runs "$bdir.run2.log" "$bdir/mlp"; then
        ok "$what: once the model is fixed, the build succeeds again"
    else
        bad "$what: once the model is fixed, the build succeeds again" "$bdir.fixed.log"
    fi
    check_imports "$what" "$gen/mlp.c" "$gen/mlp.d" "$rng_o" "$bdir/mlp" cmake_build "$bdir"
}

# The CMake package finds its files relative to itself, so the staged tree
# works where it is.
check_cmake "staged CMake package (relocatable)" "$stage$sprefix" "Unix Makefiles" "$tmp/cmake-staged"
cp "$tmp/cmake-staged.run.log" "$tmp/reference.run" 2>/dev/null

check_uninstall "staged" "$stage$sprefix" DESTDIR="$stage" PREFIX="$sprefix"

# ---- a direct install: PREFIX=… --------------------------------------------------

prefix=$tmp/prefix
check "make install PREFIX=…" "$tmp/install.log" "$MAKE" --no-print-directory BUILD="$BUILD" install PREFIX="$prefix"
check_tree "direct" "$prefix"

# the installed onnx2amp converts an ONNX model that the installed ampc
# compiles (where /usr/bin/python3 has onnx: Debian python3-onnx)
if /usr/bin/python3 -c 'import onnx' >/dev/null 2>&1; then
    mkdir -p "$tmp/onnx"
    /usr/bin/python3 - "$tmp/onnx/lin.onnx" <<'EOP'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "fc.weight")
g = helper.make_graph([helper.make_node("Gemm", ["x", "fc.weight"], ["y"], transB=1)], "lin",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 3])], [w])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
EOP
    if (cd "$tmp/onnx" && /usr/bin/python3 "$prefix/bin/onnx2amp" lin.onnx -o lin.amp &&
            "$prefix/bin/ampc" lin.amp -t cpu -o lin.c) > "$tmp/onnx.log" 2>&1 &&
        grep -q "param fc.weight: f32\[3, 4\]" "$tmp/onnx/lin.amp" && [ -s "$tmp/onnx/lin.safetensors" ]; then
        ok "direct: the installed onnx2amp converts an ONNX model the installed ampc compiles"
    else
        bad "direct: the installed onnx2amp converts an ONNX model the installed ampc compiles" "$tmp/onnx.log"
    fi
else
    echo "skip direct: onnx2amp: /usr/bin/python3 has no onnx (Debian: python3-onnx)"
fi

# pkg-config
PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PKG_CONFIG_PATH
pc_version=$(pkg-config --modversion amprt 2>&1)
pc_cflags=$(pkg-config --cflags amprt 2>&1)
pc_libs=$(pkg-config --libs amprt 2>&1)
pc_static=$(pkg-config --static --libs amprt 2>&1)
pc_ampc=$(pkg-config --variable=ampc amprt 2>&1)
{
    echo "modversion: $pc_version"
    echo "cflags: $pc_cflags"
    echo "libs: $pc_libs"
    echo "static libs: $pc_static"
    echo "ampc: $pc_ampc"
} > "$tmp/pkgconfig.log"
# shellcheck disable=SC2086
if [ "$pc_version" = "$version" ] && [ "$(echo $pc_cflags)" = "-I$prefix/include" ] &&
    [ "$(echo $pc_libs)" = "-L$prefix/lib -lamprt" ] &&
    [ "$(echo $pc_static)" = "-L$prefix/lib -lamprt -lm -lpthread" ] &&
    [ "$pc_ampc" = "$prefix/bin/ampc" ]; then
    ok "pkg-config amprt: version, -I, -lamprt, with --static -lm -lpthread, and the ampc variable"
else
    bad "pkg-config amprt: version, -I, -lamprt, with --static -lm -lpthread, and the ampc variable" "$tmp/pkgconfig.log"
fi

# -- examples/make: ampc from PATH, the runtime from pkg-config
mk=$src/make
check "make example: builds with ampc from PATH and pkg-config amprt" "$tmp/make.build.log" \
    env PATH="$prefix/bin:$PATH" "$MAKE" -C "$mk"
if runs "$tmp/make.run.log" "$mk/mlp"; then ok "make example: the program runs"; else bad "make example: the program runs" "$tmp/make.run.log"; fi
readelf -d "$mk/mlp" > "$tmp/make.readelf.log" 2>&1
if grep -q "Shared library: \[libamprt.so.$major\]" "$tmp/make.readelf.log"; then
    ok "make example: linked against the soname libamprt.so.$major"
else
    bad "make example: linked against the soname libamprt.so.$major" "$tmp/make.readelf.log"
fi
if cmp -s "$tmp/make.run.log" "$tmp/reference.run"; then
    ok "the Make and CMake builds of the example print the same"
else
    bad "the Make and CMake builds of the example print the same" "$tmp/make.run.log"
fi
if grep -q '^mlp\.c mlp\.h:' "$mk/mlp.d" 2>/dev/null && grep -q '^ \.\./mlp\.amp$' "$mk/mlp.d" &&
    grep -q '^\.\./mlp\.amp:$' "$mk/mlp.d"; then
    ok "make example: ampc -MD -MP wrote mlp.d: mlp.c mlp.h depend on ../mlp.amp, which has a phony rule"
else
    bad "make example: ampc -MD -MP wrote mlp.d: mlp.c mlp.h depend on ../mlp.amp, which has a phony rule" "$mk/mlp.d"
fi

# From here on ampc is named by AMPC= rather than found in PATH.
mkx() {
    "$MAKE" -C "$mk" AMPC="$prefix/bin/ampc" "$@"
}

tick
mkx -q > "$tmp/make.q.log" 2>&1
q=$?
mkx > "$tmp/make.again.log" 2>&1
rc=$?
newer=$(find "$mk" -newer "$tmp/stamp" -print)
if [ $q -eq 0 ] && [ $rc -eq 0 ] && [ -z "$newer" ]; then
    ok "make example: a second build with nothing changed does nothing (make -q; no file rewritten)"
else
    echo "make -q: $q; rewritten: $newer" >> "$tmp/make.again.log"
    bad "make example: a second build with nothing changed does nothing (make -q; no file rewritten)" "$tmp/make.again.log"
fi

tick
touch "$model"
mkx > "$tmp/make.touch.log" 2>&1
rc=$?
newer=$(find "$mk" -newer "$tmp/stamp" -print)
if [ $rc -eq 0 ] && [ -z "$newer" ] && grep -q 'ampc' "$tmp/make.touch.log"; then
    ok "make example: touching the model reruns ampc, and its unchanged outputs rebuild nothing"
else
    echo "rewritten: $newer" >> "$tmp/make.touch.log"
    bad "make example: touching the model reruns ampc, and its unchanged outputs rebuild nothing" "$tmp/make.touch.log"
fi
tick
echo "# an edit" >> "$model"
mkx > "$tmp/make.edit.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$mk/mlp.c" -nt "$tmp/stamp" ] && [ "$mk/mlp.h" -nt "$tmp/stamp" ] &&
    [ "$mk/mlp.o" -nt "$tmp/stamp" ] && [ "$mk/main.o" -nt "$tmp/stamp" ] && [ "$mk/mlp" -nt "$tmp/stamp" ] &&
    ! [ "$mk/rng.o" -nt "$tmp/stamp" ]; then
    ok "make example: editing the model reruns ampc and rebuilds mlp.o, main.o, mlp, not rng.o"
else
    bad "make example: editing the model reruns ampc and rebuilds mlp.o, main.o, mlp, not rng.o" "$tmp/make.edit.log"
fi

cp -p "$mk/mlp.c" "$tmp/mlp.c.before"
cp -p "$mk/mlp.h" "$tmp/mlp.h.before"
tick
cp "$tmp/mlp.amp.bad" "$model"
mkx > "$tmp/make.bad.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then ok "make example: a model with an error fails the build"; else bad "make example: a model with an error fails the build" "$tmp/make.bad.log"; fi
if grep -q "$diag" "$tmp/make.bad.log"; then
    ok "make example: the build output shows ampc's file:line:col: error: diagnostic"
else
    bad "make example: the build output shows ampc's file:line:col: error: diagnostic" "$tmp/make.bad.log"
fi
if cmp -s "$mk/mlp.c" "$tmp/mlp.c.before" && cmp -s "$mk/mlp.h" "$tmp/mlp.h.before" &&
    ! [ "$mk/mlp.c" -nt "$tmp/stamp" ] && ! [ "$mk/mlp.h" -nt "$tmp/stamp" ] && ! [ "$mk/mlp" -nt "$tmp/stamp" ]; then
    ok "make example: the failed build leaves mlp.c, mlp.h and the program untouched"
else
    bad "make example: the failed build leaves mlp.c, mlp.h and the program untouched"
fi
tick
cp "$tmp/mlp.amp.good" "$model"
if mkx > "$tmp/make.fixed.log" 2>&1 && runs "$tmp/make.run2.log" "$mk/mlp"; then
    ok "make example: once the model is fixed, the build succeeds again"
else
    bad "make example: once the model is fixed, the build succeeds again" "$tmp/make.fixed.log"
fi
make_build() {
    mkx > "$1" 2>&1
}
check_imports "make example" "$mk/mlp.c" "$mk/mlp.d" "$mk/rng.o" "$mk/mlp" make_build "$tmp/make"

# -- examples/cmake, with each generator
check_cmake "cmake (Unix Makefiles)" "$prefix" "Unix Makefiles" "$tmp/cmake-make" full
if command -v ninja > /dev/null 2>&1; then
    check_cmake "cmake (Ninja)" "$prefix" "Ninja" "$tmp/cmake-ninja" full
else
    echo "skip cmake (Ninja): ninja is not installed"
fi

# -- ampc_add_model's INCLUDE_DIRS and OPTIONS: the model imports a file
# found only through INCLUDE_DIRS, and OPTIONS reach ampc (-g puts #line
# directives in the C, --f32-outputs makes the output float); an option
# ampc_add_model writes itself is refused when configuring
mkdir -p "$tmp/addmodel/blocks"
cat > "$tmp/addmodel/blocks/dense.amp" <<'EOF'
block Dense(x, d_in: int, d_out: int) {
  param weight: f32[d_out, d_in]
  param bias: f32[d_out]
  return linear(x, weight, bias)
}
EOF
cat > "$tmp/addmodel/net.amp" <<'EOF'
import "dense.amp"

model Net(B) {
  input x: f32[B, 4]
  module fc = Dense(4, 2)
  autocast {
    y = fc(x)
  }
  output y
}
EOF
cat > "$tmp/addmodel/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(addmodel LANGUAGES C)
find_package(ampc 0.1 REQUIRED)
ampc_add_model(net SOURCE net.amp TARGET cpu INCLUDE_DIRS blocks OPTIONS -g --f32-outputs ${EXTRA})
EOF
what="ampc_add_model: INCLUDE_DIRS finds an import, OPTIONS reach ampc (-g: #line; --f32-outputs: float y)"
if "$CMAKE" -S "$tmp/addmodel" -B "$tmp/addmodel/b" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/addmodel.log" 2>&1 &&
    "$CMAKE" --build "$tmp/addmodel/b" >> "$tmp/addmodel.log" 2>&1 &&
    grep -q '^#line [0-9]* ".*net.amp"' "$tmp/addmodel/b/ampc/net/net.c" &&
    grep -q 'float \*y;' "$tmp/addmodel/b/ampc/net/net.h"; then
    ok "$what"
else
    bad "$what" "$tmp/addmodel.log"
fi
what="ampc_add_model: OPTIONS -o is refused when configuring, with the option named"
if ! "$CMAKE" -S "$tmp/addmodel" -B "$tmp/addmodel/c" -DCMAKE_PREFIX_PATH="$prefix" -DEXTRA=-o/tmp/x.c \
        > "$tmp/addmodel-o.log" 2>&1 && grep -q "OPTIONS may not contain '-o/tmp/x.c'" "$tmp/addmodel-o.log"; then
    ok "$what"
else
    bad "$what" "$tmp/addmodel-o.log"
fi

# -- the package's version file
mkdir -p "$tmp/versions"
cat > "$tmp/versions/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(versions LANGUAGES C)
foreach(request IN LISTS REQUESTS)
  string(REPLACE "," ";" args "${request}")
  unset(ampc_FOUND)
  find_package(ampc ${args} QUIET)
  if(ampc_FOUND)
    message(STATUS "version request [${request}]: found")
  else()
    message(STATUS "version request [${request}]: not found")
  endif()
endforeach()
EOF
maj_min=${version%.*}
minor=${maj_min#*.}
cat > "$tmp/versions.expected" <<EOF
version request [$maj_min]: found
version request [$version,EXACT]: found
version request [$maj_min...<$((major + 1)).0]: found
version request [$major.$((minor + 1))]: not found
version request [$((major + 1)).0]: not found
EOF
if [ "$major" -eq 0 ] && [ "$minor" -gt 0 ]; then
    echo "version request [0.$((minor - 1))]: not found" >> "$tmp/versions.expected"
fi
requests=$(sed 's/^version request \[\(.*\)\]: .*/\1/' "$tmp/versions.expected" | tr '\n' ';')
requests=${requests%;}
"$CMAKE" -S "$tmp/versions" -B "$tmp/versions/b" -DCMAKE_PREFIX_PATH="$prefix" "-DREQUESTS=$requests" \
    > "$tmp/versions.log" 2>&1
sed -n 's/^-- \(version request .*\)/\1/p' "$tmp/versions.log" > "$tmp/versions.got"
if cmp -s "$tmp/versions.expected" "$tmp/versions.got"; then
    ok "ampcConfigVersion.cmake: $maj_min, $version EXACT and a range are found; newer or other-series versions are not"
else
    cat "$tmp/versions.got" >> "$tmp/versions.log"
    bad "ampcConfigVersion.cmake: $maj_min, $version EXACT and a range are found; newer or other-series versions are not" "$tmp/versions.log"
fi

# docs/pytorch.md's workflow from the installed torch2amp, ampc --emit=main and libamprt
if sh tests/install/torch.sh "$prefix" > "$tmp/torch.log" 2>&1; then
    ok "the PyTorch workflow with installed pieces only ($(tail -n 1 "$tmp/torch.log"))"
else
    bad "the PyTorch workflow with installed pieces only (tests/install/torch.sh)" "$tmp/torch.log"
fi

# from a trained checkpoint to a deployed program, with installed pieces only
if sh tests/install/deploy.sh "$prefix" > "$tmp/deploy.log" 2>&1; then
    ok "train, save, deploy with installed pieces only ($(tail -n 1 "$tmp/deploy.log"))"
else
    bad "train, save, deploy with installed pieces only (tests/install/deploy.sh)" "$tmp/deploy.log"
fi

check_uninstall "direct" "$prefix" PREFIX="$prefix"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
