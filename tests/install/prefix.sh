#!/bin/sh
# prefix.sh ARCHIVE... -- HEADER...: every global symbol the static libraries define is either a
# public function (declared with HC_API in the headers) or carries the internal prefix hc__
# (docs/DESIGN.md). Prints the offenders on failure.
t=$(mktemp -d)
libs=""
while [ "$1" != "--" ]; do libs="$libs $1"; shift; done
shift
cat "$@" | tr '\n' ' ' | tr ';' '\n' | grep 'HC_API' |
    sed -n 's/.*[^a-zA-Z0-9_]\(hc_[a-zA-Z0-9_]*\) *(.*/\1/p' | sort -u >"$t/public"
nm --defined-only $libs 2>/dev/null | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^hc__' |
    sort -u >"$t/plain"
comm -23 "$t/plain" "$t/public" >"$t/bad"
if [ -s "$t/bad" ]; then
    echo "global symbols neither public nor prefixed hc__:"
    cat "$t/bad"
    rm -rf "$t"
    exit 1
fi
echo "$(wc -l <"$t/public") public symbols; every other global symbol is hc__"
rm -rf "$t"
