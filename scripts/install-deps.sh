#!/bin/sh
# install-deps.sh [--test|--docs]: install what building ampc needs, and
# with --test also what its test suite needs, with --docs what draws the
# pictures under docs/ (Graphviz for --emit=dot, gnuplot for the training
# and benchmark plots), from Debian's packages.  Installs only what is
# missing; needs root (or sudo) only when something is.
set -eu

want="make gcc flex bison libgmp-dev"
if [ "${1:-}" = "--test" ]; then
    # clang: the e2e tests build the emitted C with it too, and its
    # libFuzzer and sanitizers (libclang-rt) run the fuzz and ASan suites.
    want="$want clang libclang-rt-dev libcmocka-dev"
    # the install test builds the example projects with CMake (and Ninja),
    # reads the runtime's flags with pkg-config, and renders the man page
    want="$want cmake ninja-build pkgconf groff-base"
    # PyTorch is a reference for tests (never a dependency of ampc): the
    # resnet18 names are checked against the installed torchvision
    want="$want python3-torch python3-torchvision"
    # ONNX: tools/onnx2amp reads ONNX models; tests/onnx exports torchvision
    # models to ONNX and runs ONNX's own node tests through it
    want="$want python3-onnx"
    # Open MPI: tests/mpi trains data-parallel under mpirun (MPI=1 runtime)
    want="$want libopenmpi-dev openmpi-bin"
    # aarch64 under emulation (make test-aarch64): the cross compiler and
    # C library, qemu's user-mode emulator, and cmocka built for arm64 from
    # Debian's own multiarch archive (the runtime tests link it; it brings
    # libc6:arm64, whose loader lets qemu run them without a sysroot)
    want="$want gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64"
elif [ "${1:-}" = "--docs" ]; then
    # docs/resnet18.png (docs/cli.md), docs/benchmarks-*.png and the
    # training curves (scripts/plot-bench.sh, scripts/plot-training.sh)
    want="$want graphviz gnuplot-nox"
fi

missing=""
for pkg in $want; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
    *"install ok installed"*) ;;
    *) missing="$missing $pkg" ;;
    esac
done

if [ -z "$missing" ]; then
    exit 0
fi
echo "install-deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: need root to install:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# an :arm64 package needs the architecture known to dpkg before the update
case "$missing" in
*:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64 ;;
esac
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
