#!/bin/sh
# options.sh BUILD: the options `ampc --help` lists are the ones the man
# page (man/ampc.1) and docs/cli.md document, the --dump passes agree, and
# README.md quotes --help as it is.
# --help is the one source; a new option must reach both documents.
# Prints each option missing from a document; fails if any is.
set -u
BUILD=${1:-build}
AMPC=$BUILD/ampc
help=$("$AMPC" --help) || { echo "options: $AMPC --help failed"; exit 1; }
# the man page as plain words: \- is -, font escapes and \c go
man=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\c//g' -e 's/^\.[A-Z][A-Z]* *//' -e 's/" "//g' -e 's/"//g' man/ampc.1)
cli=$(cat docs/cli.md)
# whether text $1 has option $2 as a whole word (-w is not -whatever);
# -Wno- stands for -Wno-CLASS, any class
has() {
    case $2 in
    -Wno-) printf '%s\n' "$1" | grep -q -e '-Wno-' ;;
    *) printf '%s\n' "$1" | grep -Eq -e "(^|[^-A-Za-z0-9])$2([^-A-Za-z0-9]|\$)" ;;
    esac
}
# option names: the words starting with '-' at the start of help's option
# lines (-t, --target=TARGET gives -t and --target), up to '=' or '['
options=$(printf '%s\n' "$help" | sed -n 's/^  \(-[^ ].*\)/\1/p' | sed 's/  .*//' | tr ',' '\n' |
    sed -e 's/^ *//' -e 's/[ =[].*//' | sort -u)
missing=0
checked=0
for o in $options; do
    [ "$o" = "-" ] && continue
    checked=$((checked + 1))
    # -Wno-CLASS is documented as -Wno-<class>/-Wno-CLASS
    key=$o
    [ "$o" = "-Wno-CLASS" ] && key=-Wno-
    has "$man" "$key" || { echo "man/ampc.1 does not document $o"; missing=$((missing + 1)); }
    has "$cli" "$key" || { echo "docs/cli.md does not document $o"; missing=$((missing + 1)); }
done
# --dump's passes: the words after "--dump=PASS" in help's parentheses
passes=$(printf '%s\n' "$help" | sed -n '/--dump=PASS/,/)/p' | tr -c 'a-z\n' ' ' | tr ' ' '\n' |
    grep -v -x -e '' -e dump -e pass -e print -e the -e ir -e after -e for -e step -e s -e training -e graph)
for p in $passes; do
    has "$man" "$p" || { echo "man/ampc.1 does not list the --dump pass $p"; missing=$((missing + 1)); }
    has "$cli" "$p" || { echo "docs/cli.md does not list the --dump pass $p"; missing=$((missing + 1)); }
done
# README.md quotes --help whole, in the fenced block after its heading
readme=$(awk '/^## `ampc --help`/ { h = 1; next } h && /^```/ { if (in_block) exit; in_block = 1; next } in_block' README.md)
if [ "$readme" != "$help" ]; then
    echo "README.md's '## \`ampc --help\`' block is not ampc --help's output:"
    printf '%s\n' "$help" > "${TMPDIR:-/tmp}/ampc-help.$$"
    printf '%s\n' "$readme" | diff - "${TMPDIR:-/tmp}/ampc-help.$$" | head -20
    rm -f "${TMPDIR:-/tmp}/ampc-help.$$"
    missing=$((missing + 1))
fi
echo "options: $checked options and $(echo $passes | wc -w) --dump passes checked, $missing missing"
[ "$missing" -eq 0 ]
