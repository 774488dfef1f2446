#!/usr/bin/env bash
# bash square wave, written the way a typical script is: echo to the value file,
# external `sleep` for the half period. Timestamps come from $EPOCHREALTIME
# (CLOCK_REALTIME, microseconds), so the log says clock=realtime. Needs bash >= 5.
set -u

usage() {
    echo "squarewave.sh: $1" >&2
    echo "usage: squarewave.sh --period-ns N --duration-ns N --pin PATH --log PATH [--prio N] [--allow-no-rt] [--mlock]" >&2
    exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

period_ns="" duration_ns="" pin="" log=""
while (($# > 0)); do
    case $1 in
        --allow-no-rt) shift; continue ;;
        --mlock) echo "squarewave.sh: --mlock: bash cannot lock its memory (no mlockall)" >&2; exit 69 ;;
        --period-ns | --duration-ns | --pin | --log | --prio)
            (($# >= 2)) || usage "missing value for $1" ;;
        *) usage "unknown flag: $1" ;;
    esac
    case $1 in
        --period-ns) is_uint "$2" || usage "bad value for $1: $2"; period_ns=$2 ;;
        --duration-ns) is_uint "$2" || usage "bad value for $1: $2"; duration_ns=$2 ;;
        --pin) pin=$2 ;;
        --log) log=$2 ;;
        --prio) is_uint "$2" || usage "bad value for $1: $2" ;; # accepted, ignored
    esac
    shift 2
done
[[ -n $period_ns && $period_ns -ge 2 ]] || usage "--period-ns is required and must be >= 2"
[[ -n $duration_ns ]] || usage "--duration-ns is required"
[[ -n $pin && -n $log ]] || usage "--pin and --log are required"
[[ ${BASH_VERSINFO[0]} -ge 5 ]] || { echo "squarewave.sh: needs bash >= 5 for EPOCHREALTIME" >&2; exit 1; }

half_ns=$((period_ns / 2))
printf -v half_s '%d.%09d' $((half_ns / 1000000000)) $((half_ns % 1000000000))

stop=0
sleeper=""
# Sleep in the background and `wait`, so a stop signal is handled at once
# instead of after the current sleep.
on_stop() {
    stop=1
    [[ -n $sleeper ]] && kill "$sleeper" 2>/dev/null
}
trap on_stop TERM INT

now_ns() { local t=${EPOCHREALTIME/[.,]/}; REPLY=${t}000; }

edges=()
edge() {
    # 1<> opens read-write without truncating: the observer has the file mmap'd.
    echo "$1" 1<>"$pin" || { echo "squarewave.sh: cannot write pin $pin" >&2; exit 1; }
    now_ns
    edges+=("$REPLY $1")
    last=$1
}

now_ns
start_ns=$REPLY
level=1
last=0
done_=0
while :; do
    edge "$level"
    ((done_)) && break
    sleep "$half_s" &
    sleeper=$!
    wait "$sleeper" 2>/dev/null
    sleeper=""
    ((stop)) && break
    now_ns
    ((REPLY - start_ns >= duration_ns)) && done_=1
    level=$((1 - level))
    ((done_ && level == 1)) && break
done
((last == 1)) && edge 0 # leave the pin at '0'

tmp="$log.tmp.$$"
{
    echo "# jitterlab-edges v1 clock=realtime impl=bash"
    ((${#edges[@]})) && printf '%s\n' "${edges[@]}"
    echo "# end edges=${#edges[@]}"
} >"$tmp" && mv -f "$tmp" "$log" || { echo "squarewave.sh: cannot write log $log" >&2; exit 1; }
exit 0
