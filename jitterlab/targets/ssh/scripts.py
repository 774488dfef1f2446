"""The constant shell scripts the ssh and labgrid targets run on the target (ssh_sessions.py).

Nothing from the user or a campaign is ever put into them: paths and argv reach them as positional
parameters ("$1", "$@"), quoted word by word on this side.
"""

# run: the command's output is the channel's; EOF on stdin (timeout, dead controller) kills it.
# (`&` leaves SIGINT and SIGQUIT ignored in the command: fine here, run() only ever sends KILL.)
RUN = r"""
exec 3<&0
setsid "$@" </dev/null 3<&- &
pg=$!
{ while read -r _; do :; done; kill -s KILL -- "-$pg"; } <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$pg"
rc=$?
kill "$w" 2>/dev/null
kill -s KILL -- "-$pg" 2>/dev/null
exit "$rc"
"""

# spawn: prints "pgid N", "exit RC" when the leader ends, "gone" when the group is gone.
# stdin carries "sig NAME" and "stop TICKS"; EOF counts as "stop" with a 2 s grace. The command
# starts in the foreground of a pipeline, not with `&`: an asynchronous command would inherit
# SIGINT and SIGQUIT ignored, and stress-ng, fio and iperf3 finish and report on SIGINT.
SPAWN = r"""
log=$1; shift
exec 3<&0 4>&1
{
  setsid sh -c 'echo "$$"; exec "$@" </dev/null >"$0" 2>&1' "$log" "$@" 3<&- 4>&-
  echo "exit $?" >&4
} | {
  read -r pg || exit 0
  echo "pgid $pg" >&4
  alive() {
    kill -s 0 -- "-$pg" 2>/dev/null || return 1
    for f in /proc/[0-9]*/stat; do
      { read -r s < "$f"; } 2>/dev/null || continue
      set -- ${s##*) }
      [ "$3" = "$pg" ] && [ "$1" != Z ] && [ "$1" != X ] && return 0
    done
    return 1
  }
  settle() { n=$1; while [ "$n" -gt 0 ] && alive; do sleep 0.05; n=$((n - 1)); done; }
  ticks=40
  while read -r cmd arg <&3; do
    case $cmd in
      sig) kill -s "$arg" -- "-$pg" ;;
      stop) ticks=$arg; break ;;
    esac
  done
  if alive; then
    kill -s TERM -- "-$pg"
    settle "$ticks"
    if alive; then kill -s KILL -- "-$pg"; settle 100; fi
  fi
} >/dev/null 2>&1
echo gone
"""

# connect: create the workdir 0700, or check the one there: a directory (not a link) of ours that no
# one else may write (programs are built and run from it)
CONNECT = r"""
d=${1:-/tmp/jitterlab-$(id -un)}
p=${d%/*}
[ -z "$p" ] || mkdir -p -- "$p" || exit 3
mkdir -m 700 -- "$d" 2>/dev/null || [ -e "$d" ] || [ -L "$d" ] || exit 3
if [ -L "$d" ] || [ ! -d "$d" ]; then echo "notdir $d"; exit 0; fi
[ -O "$d" ] || { echo "notours $d"; exit 0; }
case $(ls -ld -- "$d") in ?????w*|????????w*) echo "writable $d"; exit 0 ;; esac
echo "workdir $d"
for t in setsid tar; do command -v "$t" >/dev/null 2>&1 || echo "missing $t"; done
"""
PUT_FILE = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
PUT_TREE = 'mkdir -p -- "$1" && tar -C "$1" -xf -'
GET = r"""
if [ -d "$1" ]; then echo D; cd "$1" && exec tar -cf - .; fi
[ -e "$1" ] || { echo "$1: No such file or directory" >&2; exit 1; }
echo F
exec cat -- "$1"
"""
