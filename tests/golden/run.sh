#!/bin/sh
# tests/golden/run.sh AMPC: golden tests of the ampc command, cproc style.
#
#   sh tests/golden/run.sh build/ampc            run every case
#   sh tests/golden/run.sh build/ampc mlp err_x  run only these cases
#   UPDATE=1 sh tests/golden/run.sh build/ampc   rewrite the expected files
#
# Each case is NAME.amp with either
#   NAME.TARGET.c + NAME.TARGET.h   expected output of `ampc -t TARGET`
#                                   (TARGET is tpu, gpu or cpu; one pair per
#                                   target the case is checked on), or
#   NAME.TARGET.explain             expected stdout of `ampc -t TARGET
#                                   --explain NAME.amp` (no -o: exit 0 and
#                                   no file written),
#   NAME.TARGET.json                the same with --explain=json (checked to
#                                   be valid JSON when python3 is there),
#   NAME.TARGET.dot                 expected stdout of --emit=dot -o - (fed
#                                   to Graphviz's dot when it is installed),
#   NAME.err                        expected stderr of a failing compile,
#                                   caret lines included; the exit status
#                                   must be 1 and no output file may appear.
# Error cases compile with -t tpu unless the first line of NAME.amp is
#   # ampc-flags: FLAGS
# which then gives all the flags (on output cases it adds to -t TARGET).
# Output cases must compile with an empty stderr: a warning fails them.
#
# The runner works in this directory, so messages name just NAME.amp, and
# writes outputs with -o into a temporary directory as NAME.TARGET.c (so the
# .c includes "NAME.TARGET.h", as the expected pair does).
#
# UPDATE=1 writes what ampc produces now over the expected files (a new
# case with no expected file gets NAME.err if it fails, NAME.tpu.c/.h if it
# compiles).  An expected file is a claim that the output is right: read
# every one you rewrite (git diff) before committing it.
set -u

if [ $# -lt 1 ]; then
    echo "usage: sh tests/golden/run.sh AMPC [NAME...]" >&2
    exit 2
fi
case $1 in
/*) ampc=$1 ;;
*) ampc=$(pwd)/$1 ;;
esac
shift
if [ ! -x "$ampc" ]; then
    echo "run.sh: $ampc is not an executable" >&2
    exit 2
fi
cd "$(dirname "$0")" || exit 2
update=${UPDATE:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ampc-golden.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

passed=0
failed=0

pass() {
    echo "PASS $1"
    passed=$((passed + 1))
}

fail() {
    echo "FAIL $1: $2"
    failed=$((failed + 1))
}

# The flags of a case: the text after "# ampc-flags:" on its first line.
flags_of() {
    sed -n '1s/^# *ampc-flags:[ 	]*//p' "$1"
}

# Compare expected file $1 with actual file $2; on UPDATE, copy instead.
# Prints the diff and returns 1 when they differ.
check_file() {
    if [ -n "$update" ]; then
        cp "$2" "$1"
        return 0
    fi
    if [ ! -f "$1" ]; then
        echo "    missing expected file $1"
        return 1
    fi
    if ! cmp -s "$1" "$2"; then
        diff -u "$1" "$2" | sed 's/^/    /'
        return 1
    fi
    return 0
}

# An error case: exit status 1, stderr as expected, no output written.
run_err() {
    name=$1
    flags=$(flags_of "$name.amp")
    [ -n "$flags" ] || flags="-t tpu"
    out=$tmp/$name
    mkdir -p "$out"
    # shellcheck disable=SC2086 # the flags are words
    "$ampc" $flags "$name.amp" -o "$out/$name.c" >"$out/stdout" 2>"$out/stderr"
    status=$?
    ok=1
    why=
    if [ "$status" -ne 1 ]; then
        ok=0
        why="exit status $status, expected 1"
        sed 's/^/    /' "$out/stderr"
    fi
    leftover=$(cd "$out" && ls | grep -v -e '^stdout$' -e '^stderr$')
    if [ -n "$leftover" ]; then
        ok=0
        why="${why:+$why; }left output files: $(echo $leftover)"
    fi
    if [ -s "$out/stdout" ]; then
        ok=0
        why="${why:+$why; }wrote to stdout"
    fi
    if ! check_file "$name.err" "$out/stderr"; then
        ok=0
        why="${why:+$why; }stderr differs from $name.err"
    fi
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "$why"; fi
}

# An output case on one target.
run_out() {
    name=$1
    target=$2
    flags=$(flags_of "$name.amp")
    out=$tmp/$name.$target
    mkdir -p "$out"
    # shellcheck disable=SC2086
    "$ampc" -t "$target" $flags "$name.amp" -o "$out/$name.$target.c" >"$out/stdout" 2>"$out/stderr"
    status=$?
    if [ "$status" -ne 0 ]; then
        sed 's/^/    /' "$out/stderr"
        fail "$name.$target" "exit status $status, expected 0"
        return
    fi
    ok=1
    why=
    if [ -s "$out/stderr" ]; then
        ok=0
        why="unexpected stderr"
        sed 's/^/    /' "$out/stderr"
    fi
    for ext in c h; do
        if ! check_file "$name.$target.$ext" "$out/$name.$target.$ext"; then
            ok=0
            why="${why:+$why; }$name.$target.$ext differs"
        fi
    done
    if [ $ok -eq 1 ]; then pass "$name.$target"; else fail "$name.$target" "$why"; fi
}

# A printed case (--explain, --explain=json, --emit=dot) on one target:
# exit 0, empty stderr, stdout as expected, no file left behind.
run_printed() {
    name=$1
    target=$2
    kind=$3
    flags=$(flags_of "$name.amp")
    out=$tmp/$name.$target.$kind
    mkdir -p "$out"
    case $kind in
    explain) mode="--explain" ;;
    json) mode="--explain=json" ;;
    dot) mode="--emit=dot -o -" ;;
    esac
    # shellcheck disable=SC2086
    "$ampc" -t "$target" $flags $mode "$name.amp" >"$out/stdout" 2>"$out/stderr"
    status=$?
    ok=1
    why=
    if [ "$status" -ne 0 ]; then
        ok=0
        why="exit status $status, expected 0"
    fi
    if [ -s "$out/stderr" ]; then
        ok=0
        why="${why:+$why; }unexpected stderr"
        sed 's/^/    /' "$out/stderr"
    fi
    for ext in c h dot; do
        if [ -e "$name.$ext" ]; then
            ok=0
            why="${why:+$why; }wrote $name.$ext"
            rm -f "$name.$ext"
        fi
    done
    if [ "$kind" = json ] && command -v python3 >/dev/null 2>&1 &&
        ! python3 -m json.tool "$out/stdout" >/dev/null 2>"$out/json-error"; then
        ok=0
        why="${why:+$why; }not valid JSON: $(cat "$out/json-error")"
    fi
    if [ "$kind" = dot ]; then
        if command -v dot >/dev/null 2>&1; then
            if ! dot -Tsvg "$out/stdout" >/dev/null 2>"$out/dot-error" || [ -s "$out/dot-error" ]; then
                ok=0
                why="${why:+$why; }dot -Tsvg rejects it: $(cat "$out/dot-error")"
            fi
        elif [ -z "${dot_skip_said:-}" ]; then
            echo "SKIP dot -Tsvg checks: Graphviz is not installed (apt-get install graphviz)"
            dot_skip_said=1
        fi
    fi
    if ! check_file "$name.$target.$kind" "$out/stdout"; then
        ok=0
        why="${why:+$why; }stdout differs from $name.$target.$kind"
    fi
    if [ $ok -eq 1 ]; then pass "$name.$target.$kind"; else fail "$name.$target.$kind" "$why"; fi
}

if [ $# -gt 0 ]; then
    cases=$*
else
    cases=$(ls *.amp 2>/dev/null | sed 's/\.amp$//')
fi

for name in $cases; do
    if [ ! -f "$name.amp" ]; then
        fail "$name" "no $name.amp"
        continue
    fi
    targets=
    printed=
    for t in tpu gpu cpu; do
        if [ -f "$name.$t.c" ] || [ -f "$name.$t.h" ]; then
            targets="$targets $t"
        fi
        for kind in explain json dot; do
            if [ -f "$name.$t.$kind" ]; then
                printed="$printed $t.$kind"
            fi
        done
    done
    for tk in $printed; do
        run_printed "$name" "${tk%.*}" "${tk#*.}"
    done
    if [ -n "$printed" ] && [ -z "$targets" ] && [ ! -f "$name.err" ]; then
        continue
    fi
    if [ -f "$name.err" ] && [ -n "$targets" ]; then
        fail "$name" "has both $name.err and expected output; keep one"
    elif [ -f "$name.err" ]; then
        run_err "$name"
    elif [ -n "$targets" ]; then
        for t in $targets; do
            run_out "$name" "$t"
        done
    elif [ -n "$update" ]; then
        # a new case: its exit status says which kind it is
        if "$ampc" -t tpu $(flags_of "$name.amp") "$name.amp" -o - >/dev/null 2>&1; then
            run_out "$name" tpu
        else
            run_err "$name"
        fi
    else
        fail "$name" "no expected output ($name.err or $name.TARGET.c + .h)"
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
