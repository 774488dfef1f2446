#!/bin/sh
# Reads jitterlab's LAVA lines (export/compare --format lava) on stdin and records them with LAVA's
# test-shell helpers: a lava-test-set per cell, a lava-test-case per line. Without lava-test-case on
# PATH (run by hand), it says so and prints the commands instead.
set -u
tab=$(printf '\t')
if command -v lava-test-case >/dev/null 2>&1; then
    lava=1
else
    lava=0
    echo "lava-test-case is not on PATH (not run by LAVA's test shell): the results follow as the commands LAVA would run"
fi
run() {
    if [ "$lava" = 1 ]; then "$@"; else echo "$*"; fi
}
while IFS=$tab read -r kind name result measurement units; do
    case $kind in
        set) run lava-test-set start "$name" ;;
        end) run lava-test-set stop "$name" ;;
        case)
            if [ "$measurement" = "-" ]; then
                run lava-test-case "$name" --result "$result"
            else
                run lava-test-case "$name" --result "$result" --measurement "$measurement" --units "$units"
            fi ;;
        *) echo "report-results.sh: ignored line: $kind" >&2 ;;
    esac
done
