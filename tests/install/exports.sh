#!/bin/sh
# exports.sh LIB HEADER...: the dynamic symbols LIB defines are exactly the functions the
# headers declare with HC_API -- nothing internal leaks (library code is built with
# -fvisibility=hidden) and nothing declared is missing. Prints the difference on failure.
lib=$1
shift
t=$(mktemp -d)
# a declaration may wrap: join each header into one line per statement first
cat "$@" | tr '\n' ' ' | tr ';' '\n' | grep 'HC_API' |
    sed -n 's/.*[^a-zA-Z0-9_]\(hc_[a-zA-Z0-9_]*\) *(.*/\1/p' | sort -u >"$t/declared"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u >"$t/exported"
if cmp -s "$t/declared" "$t/exported"; then
    echo "$(wc -l <"$t/exported") symbols, as declared"
    rm -rf "$t"
    exit 0
fi
echo "exported but not declared (<) / declared but not exported (>):"
diff "$t/exported" "$t/declared" | grep '^[<>]'
rm -rf "$t"
exit 1
