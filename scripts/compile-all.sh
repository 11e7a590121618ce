#!/bin/sh
# compile-all.sh AMPC OUTDIR: compile every .amp model of the repository
# (tests, examples, bench) for every target in every output mode (C and
# header, --explain=json, --emit=dot, --emit=check, --no-fuse), with each
# run's diagnostics and exit code, into OUTDIR.  For refactoring: run it
# with the compiler before and after a change, on a copy of each binary,
# and `diff -r` the two directories; every difference is then one the
# change made.
set -u
[ $# -eq 2 ] || { echo "usage: sh scripts/compile-all.sh AMPC OUTDIR" >&2; exit 2; }
AMPC=$(realpath "$1")
mkdir -p "$2"
OUT=$(realpath "$2")
cd "$(dirname "$0")/.."
for f in $(find tests examples bench -name '*.amp' | sort); do
    d=$(dirname "$f")
    key=$(echo "$f" | tr '/' '_')
    for t in tpu gpu cpu; do
        base="$OUT/$key.$t"
        "$AMPC" "$f" -I "$d" -I examples -t $t -o "$base.c" >"$base.out" 2>&1
        echo "rc=$?" >>"$base.out"
        "$AMPC" "$f" -I "$d" -I examples -t $t --explain=json >"$base.json" 2>&1
        "$AMPC" "$f" -I "$d" -I examples -t $t --emit=dot -o "$base.dot" >/dev/null 2>&1
        "$AMPC" "$f" -I "$d" -I examples -t $t --emit=check -o "$base.check.c" >/dev/null 2>&1
        "$AMPC" "$f" -I "$d" -I examples -t $t --no-fuse -o "$base.nofuse.c" >/dev/null 2>&1
    done
done
