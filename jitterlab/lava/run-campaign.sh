#!/bin/sh
# The steps of jitterlab's LAVA test definition (jitterlab.yaml), runnable by hand as well:
#   jitterlab/lava/run-campaign.sh CAMPAIGN RESULTS [BASELINE CANDIDATE [JITTERLAB [BUNDLE]]]
# Finds jitterlab (the command JITTERLAB; else installed without network from BUNDLE, what
# `jitterlab lava-bundle` wrote: its installed tree unpacked, or, without one for this device, its
# wheels installed with its pip; else jitterlab on PATH, else python3 -m jitterlab, else
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

now_ms() {  # milliseconds with GNU date's %N; elsewhere whole seconds
    t=$(date +%s%N)
    case $t in *N) echo $(($(date +%s) * 1000)) ;; *) echo $((t / 1000000)) ;; esac
}
recorded() {  # a value of the bundle's bundle.json (one key a line, as jitterlab lava-bundle writes it)
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$bundle/bundle.json" 2>/dev/null | head -n 1
}
install_failed() {  # the case jitterlab-install failed, and nothing else to run
    echo "error: $*"
    printf 'case\tjitterlab-install\tfail\t-\t-\n' | "$here/report-results.sh"
    exit 0
}

if [ -n "$command" ]; then
    jl=$command
elif [ -n "$bundle" ]; then
    # SITE outside RESULTS, which jitterlab run makes
    site=${TMPDIR:-/tmp}/jitterlab-site
    start=$(now_ms)
    way=pip
    if [ -f "$bundle/site.tar" ] && command -v tar >/dev/null 2>&1; then
        # the tree was installed for one Python, machine and glibc (pip checked that on the device)
        python=$(recorded python) machine=$(recorded machine) glibc=$(recorded glibc)
        have=$(python3 -V 2>&1)
        have=${have#Python }
        have=${have%.*}
        libc=$(getconf GNU_LIBC_VERSION 2>/dev/null)
        libc=${libc#glibc }
        if [ "$have" = "$python" ] && [ "$(uname -m)" = "$machine" ] && [ "${libc#2.}" -ge "${glibc#2.}" ] 2>/dev/null
        then
            way=tree
        else
            echo "BUNDLE $bundle/site.tar is for Python $python on $machine (glibc $glibc or newer), this" \
                 "device has Python $have on $(uname -m) (glibc $libc): installing from its wheels with pip"
        fi
    fi
    if [ "$way" = tree ]; then
        echo "installing jitterlab from $bundle into $site by unpacking site.tar (no pip, no network)"
        rm -rf "$site" && mkdir -p "$site"
        # No sha256sum of the archive here: measured on a 2-core VM, hashing its ~640 MB costs 1.6 s of
        # CPU where unpacking it costs 0.4-1.0 s, so on a slow device the check would take longer than
        # the install it guards. The size recorded in bundle.json catches a truncated copy and tar's
        # header checksums a damaged one; the sha256 there is for checking the bundle where it is copied.
        bytes=$(recorded bytes)
        size=$(wc -c < "$bundle/site.tar")
        if [ "$size" != "$bytes" ]; then
            rm -rf "$site"
            install_failed "BUNDLE $bundle/site.tar has $size bytes where its bundle.json says $bytes" \
                           "(damaged or incompletely copied): write it again with jitterlab lava-bundle DIR"
        fi
        if ! tar -xf "$bundle/site.tar" -C "$site"; then
            rm -rf "$site"
            install_failed "could not unpack BUNDLE $bundle/site.tar into $site (damaged? write it again" \
                           "with jitterlab lava-bundle DIR; or no room in ${TMPDIR:-/tmp}?)"
        fi
    else
        # pip from its own wheel in the bundle: the device needs python3 only
        set -- "$bundle"/pip-*.whl
        [ -f "$1" ] || install_failed "BUNDLE $bundle has no pip wheel: write it with jitterlab lava-bundle DIR"
        echo "installing jitterlab from $bundle into $site with pip (no network)"
        if ! python3 "$1/pip" install --quiet --disable-pip-version-check --root-user-action=ignore --no-index \
                --find-links "$bundle" --no-compile --upgrade --target "$site" jitterlab; then
            install_failed "could not install jitterlab from BUNDLE $bundle (made for another Python or" \
                           "architecture? see $bundle/bundle.json)"
        fi
    fi
    took_ms=$(($(now_ms) - start))
    took_s=$(printf '%d.%03d' $((took_ms / 1000)) $((took_ms % 1000)))
    echo "jitterlab-install: $took_s s, by $([ "$way" = tree ] && echo "unpacking site.tar" || echo "pip from the wheels")"
    printf 'case\tjitterlab-install\tpass\t%s\ts\n' "$took_s" | "$here/report-results.sh"
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
