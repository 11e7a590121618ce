#!/bin/sh
# tests/unit/structure.sh BUILD: the compiler's layers depend one way, and no
# file or function grows past what a reader can hold.
#
#   1. includes: a file in src/LAYER/ includes only its own layer's header
#      or a lower one's (core <- front <- middle <- back), and emit.h only
#      in the back end;
#   2. calls: no object of a layer uses a function defined in a higher
#      layer (nm on BUILD/obj);
#   3. sizes: no hand-written source file over 1,500 lines, and no function
#      over 150 lines (from the line opening it at column 0 to its closing
#      brace at column 0), in src/ and runtime/.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
failed=0
fail() {
    echo "FAIL $*"
    failed=1
}

rank() {
    case $1 in
    core) echo 0 ;; front) echo 1 ;; middle) echo 2 ;; back) echo 3 ;; *) echo 9 ;;
    esac
}

# 1. includes
for layer in core front middle back; do
    r=$(rank $layer)
    for f in src/$layer/*.c src/$layer/*.h; do
        [ -f "$f" ] || continue
        for h in $(sed -n 's/^#include "\([a-z_]*\)\.h".*/\1/p' "$f"); do
            case $h in
            core | front | middle | back) hr=$(rank "$h") ;;
            emit) hr=3 ;;
            *) continue ;; # the layer's own private headers, generated ones
            esac
            [ "$hr" -le "$r" ] || fail "$f includes $h.h, a layer above $layer"
        done
    done
done

# 2. calls between layers, as the linker sees them
if [ -d "$BUILD/obj/core" ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/structure.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT INT TERM
    for layer in core front middle back; do
        nm --defined-only "$BUILD"/obj/$layer/*.o 2>/dev/null | awk '$2 == "T" || $2 == "D" || $2 == "R" || $2 == "B" {print $3}' |
            sort -u >"$tmp/def_$layer"
        nm -u "$BUILD"/obj/$layer/*.o 2>/dev/null | awk '{print $NF}' | sort -u >"$tmp/use_$layer"
    done
    check_calls() {
        user=$1
        shift
        for above in "$@"; do
            for sym in $(comm -12 "$tmp/use_$user" "$tmp/def_$above"); do
                fail "src/$user calls $sym, defined in src/$above"
            done
        done
    }
    check_calls core front middle back
    check_calls front middle back
    check_calls middle back
else
    fail "no objects in $BUILD/obj/core: build the compiler first"
fi

# 3. sizes
for f in $(find src runtime -name '*.c' -o -name '*.h' -o -name '*.inc' | sort); do
    n=$(wc -l <"$f")
    [ "$n" -le 1500 ] || fail "$f has $n lines (the limit is 1,500)"
    awk -v file="$f" '
        /^[A-Za-z_].*\)$/ || /^[A-Za-z_].*\) *{$/ { head = FNR; name = $0 }
        /^\{/ && head == FNR - 1 { start = head }
        /^[A-Za-z_].*\) *{$/ { start = FNR }
        /^}/ && start { len = FNR - start + 1
                        if (len > 150) printf "FAIL %s:%d: a function of %d lines (the limit is 150): %s\n", file, start, len, name
                        start = 0 }
    ' "$f"
done | tee "${TMPDIR:-/tmp}/structure-sizes.$$"
[ -s "${TMPDIR:-/tmp}/structure-sizes.$$" ] && failed=1
rm -f "${TMPDIR:-/tmp}/structure-sizes.$$"

if [ $failed -eq 0 ]; then
    echo "structure: layers depend one way; every file and function within its limit"
fi
exit $failed
