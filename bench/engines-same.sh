#!/usr/bin/env bash
# Every shipped scenario gives the same results on `model` and `sim` with two builds of weft
# (issue 31: a refactor of the core or of the simulator must not move a number).
#
#   bench/engines-same.sh OLD_WEFT NEW_WEFT [SCENARIO...]
#
# OLD_WEFT and NEW_WEFT are two weft binaries (build main, copy target/debug/weft aside, build
# the branch); OLD_WEFT may instead be a directory where KEEP=DIR kept OLD's documents on an
# earlier run (the simulator's scenarios take minutes). Each scenario (default:
# scenarios/*.toml; scenarios/hosts/ holds host tables, not scenarios) runs with
# `--engine model,sim --json` on both; the two documents must be equal byte for byte, or equal
# once the fields only NEW has are removed (jq: fields added are allowed, none changed or
# dropped). Prints one line per scenario and exits 1 if any differs, showing the difference.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_WEFT NEW_WEFT [SCENARIO...]" >&2
    exit 2
fi
old=$1 new=$2
shift 2
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
    files=("$@")
else
    files=(scenarios/*.toml)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# NEW with the fields OLD lacks removed (objects only; arrays must keep their length).
prune='def prune($o): if ($o|type) == "object" and type == "object"
         then with_entries(select(.key as $k | $o | has($k)) | .value = prune($o[.key]))
         elif ($o|type) == "array" and type == "array" and (length == ($o|length))
         then [range(length) as $i | .[$i] | prune($o[$i])]
         else . end;
       prune($old[0])'
same=0 added=0 differ=0 failed=0
for f in "${files[@]}"; do
    name=$(echo "$f" | tr / _)
    if [ -d "$old" ]; then
        cp "$old/$name.old" "$out/$name.old" && a=$(cat "$old/$name.rc") || exit 2
        : >"$out/$name.olderr"
    else
        "$old" run "$f" --engine model,sim --json -q >"$out/$name.old" 2>"$out/$name.olderr"
        a=$?
        if [ -n "${KEEP:-}" ]; then
            mkdir -p "$KEEP" && cp "$out/$name.old" "$KEEP/" && echo $a >"$KEEP/$name.rc"
        fi
    fi
    "$new" run "$f" --engine model,sim --json -q >"$out/$name.new" 2>"$out/$name.newerr"
    b=$?
    if [ $a -ne $b ]; then
        echo "DIFFERS  $f (exit $a before, $b after)"
        differ=$((differ + 1))
        continue
    fi
    if [ ! -s "$out/$name.old" ]; then
        echo "FAILED   $f (exit $a, no output: $(head -c 200 "$out/$name.olderr"))"
        failed=$((failed + 1))
        continue
    fi
    if cmp -s "$out/$name.old" "$out/$name.new"; then
        echo "same     $f"
        same=$((same + 1))
    elif jq -S --slurpfile old "$out/$name.old" "$prune" "$out/$name.new" >"$out/$name.pruned" &&
        jq -S . "$out/$name.old" | cmp -s - "$out/$name.pruned"; then
        echo "added    $f (fields added, none changed)"
        added=$((added + 1))
    else
        echo "DIFFERS  $f"
        diff <(jq -S . "$out/$name.old") <(jq -S . "$out/$name.new") | head -20
        differ=$((differ + 1))
    fi
done
echo "$same same, $added with fields added, $differ differ, $failed failed on both (of ${#files[@]})"
[ $differ -eq 0 ] && [ $failed -eq 0 ]
