#!/bin/sh
# cli.sh: command-line tests. Each tests/cli/NAME.cmd is a shell snippet run with $HC (the
# binary), $FIX (fixtures) and $T (a fresh folder); NAME.exit holds the expected exit status,
# NAME.stdout the exact expected stdout ($T shown as TMP), NAME.stdout_has substrings it must
# contain (one per line), NAME.stderr substrings that stderr
# must contain (one per line), NAME.schema a schema in schemas/ that stdout must satisfy,
# NAME.schema_reject one it must fail (proves the schema check can fail).
HC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIX=$ROOT/tests/fixtures
PY=/usr/bin/python3
export HC FIX
pass=0
fail=0
work=$(mktemp -d)
for cmdf in "$ROOT"/tests/cli/*.cmd; do
    name=$(basename "$cmdf" .cmd)
    base=${cmdf%.cmd}
    T=$work/$name
    mkdir -p "$T"
    export T
    (cd "$T" && sh -e "$cmdf") >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    sed "s|$T|TMP|g; s|$FIX|FIX|g" "$work/$name.out" >"$work/$name.outn"
    ok=1
    why=""
    want=$(cat "$base.exit" 2>/dev/null || echo 0)
    if [ "$rc" != "$want" ]; then ok=0; why="exit $rc, expected $want"; fi
    if [ -f "$base.stdout" ] && ! cmp -s "$base.stdout" "$work/$name.outn"; then
        ok=0
        why="$why; stdout differs:
$(diff "$base.stdout" "$work/$name.outn" | head -20)"
    fi
    if [ -f "$base.stdout_has" ]; then
        while IFS= read -r needle; do
            [ -z "$needle" ] && continue
            if ! grep -qF -- "$needle" "$work/$name.out"; then
                ok=0
                why="$why; stdout lacks '$needle'"
            fi
        done <"$base.stdout_has"
    fi
    if [ -f "$base.stderr" ]; then
        while IFS= read -r needle; do
            [ -z "$needle" ] && continue
            if ! grep -qF -- "$needle" "$work/$name.err"; then
                ok=0
                why="$why; stderr lacks '$needle'"
            fi
        done <"$base.stderr"
    fi
    if [ -f "$base.schema" ]; then
        if ! out=$($PY -W ignore "$ROOT/tests/check_schema.py" "$ROOT/schemas/$(cat "$base.schema")" \
                   "$work/$name.out" 2>&1); then
            ok=0
            why="$why; schema: $out"
        fi
    fi
    if [ -f "$base.schema_reject" ] && $PY -W ignore "$ROOT/tests/check_schema.py" \
            "$ROOT/schemas/$(cat "$base.schema_reject")" "$work/$name.out" >/dev/null 2>&1; then
        ok=0
        why="$why; the schema accepted a document it must reject"
    fi
    if grep -q 'ERROR: AddressSanitizer\|runtime error:' "$work/$name.err"; then
        ok=0
        why="$why; sanitizer report: $(grep -m1 'ERROR\|runtime error' "$work/$name.err")"
    fi
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "ok   cli/$name"
    else
        fail=$((fail + 1))
        echo "FAIL cli/$name: $why"
        sed 's/^/     stderr: /' "$work/$name.err" | head -5
    fi
done
rm -rf "$work"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
