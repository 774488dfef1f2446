#!/bin/sh
# The steps of jitterlab's LAVA test definition (jitterlab.yaml), runnable by hand as well:
#   jitterlab/lava/run-campaign.sh CAMPAIGN RESULTS [BASELINE CANDIDATE [JITTERLAB [BUNDLE]]]
# Finds jitterlab (the command JITTERLAB; else installed without network from BUNDLE, a directory of
# wheels `jitterlab lava-bundle` wrote; else jitterlab on PATH, else python3 -m jitterlab, else
# installs this repository with pip), runs the campaign on this machine, then reports each cell (or
# each row of the comparison of BASELINE and CANDIDATE) through report-results.sh.
set -u
campaign=$1
results=$2
baseline=${3:-}
candidate=${4:-}
command=${5:-${JITTERLAB:-}}
bundle=${6:-${BUNDLE:-}}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ -n "$command" ]; then
    jl=$command
elif [ -n "$bundle" ]; then
    # pip from its own wheel in the bundle: the device needs python3 only; SITE outside RESULTS,
    # which jitterlab run makes
    site=${TMPDIR:-/tmp}/jitterlab-site
    set -- "$bundle"/pip-*.whl
    if [ ! -f "$1" ]; then
        echo "error: BUNDLE $bundle has no pip wheel: write it with jitterlab lava-bundle DIR"
        printf 'case\tjitterlab-install\tfail\t-\t-\n' | "$here/report-results.sh"
        exit 0
    fi
    echo "installing jitterlab from $bundle into $site (no network)"
    start=$(date +%s)
    if ! python3 "$1/pip" install --quiet --disable-pip-version-check --root-user-action=ignore --no-index \
            --find-links "$bundle" --no-compile --upgrade --target "$site" jitterlab; then
        echo "error: could not install jitterlab from BUNDLE $bundle (made for another Python or" \
             "architecture? see $bundle/bundle.json)"
        printf 'case\tjitterlab-install\tfail\t-\t-\n' | "$here/report-results.sh"
        exit 0
    fi
    printf 'case\tjitterlab-install\tpass\t%s\ts\n' "$(($(date +%s) - start))" | "$here/report-results.sh"
    jl="env PYTHONPATH=$site python3 -m jitterlab"
elif command -v jitterlab >/dev/null 2>&1; then
    jl=jitterlab
elif (cd / && python3 -c 'import jitterlab.cli.main') >/dev/null 2>&1; then  # installed, with its deps
    jl="python3 -m jitterlab"
else
    echo "jitterlab is not installed here: installing it from $repo with pip"
    python3 -m pip install --quiet "$repo" || python3 -m pip install --quiet --break-system-packages "$repo" || {
        echo "error: could not install jitterlab (pip needs the network, or set JITTERLAB to a jitterlab" \
             "command that runs here)"
        exit 2
    }
    jl="python3 -m jitterlab"
fi
case $campaign in
    /*) ;;
    *) [ -e "$campaign" ] || campaign=$repo/$campaign ;;
esac

run_case() {  # the campaign itself as a test case, ahead of the cells
    printf 'case\tjitterlab-run\t%s\t-\t-\n' "$1"
}

# shellcheck disable=SC2086  # $jl is a command with its arguments
$jl run "$campaign" --results "$results"
rc=$?
if [ "$rc" -gt 1 ] || [ ! -d "$results" ]; then  # bad input or interrupted: nothing measured to report (jitterlab said why)
    run_case fail | "$here/report-results.sh"
    exit 0
fi
if [ -n "$baseline" ] && [ -n "$candidate" ]; then
    # shellcheck disable=SC2086
    $jl compare --results "$results" --baseline "$baseline" --candidate "$candidate" --no-pooled \
        --format lava > "$results/lava-results.txt"
else
    # shellcheck disable=SC2086
    $jl export --results "$results" --format lava -o "$results/lava-results.txt"
fi || : > "$results/lava-results.txt"
# 0: every run ended ok; 1: some failed, and their cells say which
{ if [ "$rc" = 0 ]; then run_case pass; else run_case fail; fi; cat "$results/lava-results.txt"; } |
    "$here/report-results.sh"
