#!/bin/sh
# require-openblas.sh: make sure Debian's torch calls OpenBLAS (package
# libopenblas0-pthread, which takes over libblas.so.3 through Debian's
# alternatives) so that `make bench` compares with a fair f32 PyTorch;
# without it torch runs the reference BLAS, some 50 times slower.
# Installs it when missing and we are root (or have sudo); else fails.
set -eu
pkg=libopenblas0-pthread
case "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" in
*"install ok installed"*) exit 0 ;;
esac
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "bench: PyTorch needs OpenBLAS for a fair f32 anchor: install $pkg (as root)" >&2
    exit 1
fi
echo "bench: installing $pkg (PyTorch's BLAS)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$pkg"
