#!/bin/sh
# mploader-bench killed with SIGKILL must take its whole process tree with it: the forked
# per-configuration run process (bench/isolate.cc) and everything that one started (mploader's
# workers, PyTorch's python and its workers). Starts a long run, waits until the bench has at
# least MIN_DESCENDANTS descendants (the run process counts), SIGKILLs the bench and checks that
# every descendant seen is gone (or a zombie) within 5 s. Leftovers are killed before exiting.
# Usage: check_bench_sigkill.sh BENCH MIN_DESCENDANTS BENCH-ARGS...
set -u
bench=$1 want=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }

# The pids whose parent is $1, one per line (ps: /proc/PID/task/TID/children is not everywhere).
children() { ps -e -o pid=,ppid= | awk -v p="$1" '$2 == p { print $1 }'; }
descendants() {
  for c in $(children "$1"); do echo "$c"; descendants "$c"; done
}
# Running, sleeping or stopped: not gone. A zombie is dead, waiting for init to reap it.
alive() { s=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$s" ] && [ "${s#Z}" = "$s" ]; }

err=$(mktemp)
trap 'rm -f "$err"' EXIT
"$bench" "$@" >/dev/null 2>"$err" &
bench_pid=$!
seen=""
i=0
while [ $i -lt 600 ]; do  # up to 60 s for the run process and its children to start
  seen=$(descendants "$bench_pid")
  [ "$(echo "$seen" | grep -c .)" -ge "$want" ] && break
  seen=""
  if ! alive "$bench_pid"; then
    grep -q "skipping loader" "$err" && { echo "skipped: $(cat "$err")"; exit 0; }
    fail "the bench ended before it had $want descendants: $(cat "$err")"
  fi
  sleep 0.1
  i=$((i + 1))
done
[ -n "$seen" ] || { kill -KILL "$bench_pid"; fail "the bench had no $want descendants within 60 s"; }
# Let the newest children finish starting.
sleep 0.5
seen=$(descendants "$bench_pid")
echo "bench $bench_pid, descendants:" $seen
kill -KILL "$bench_pid"
wait "$bench_pid" 2>/dev/null

left=""
i=0
while [ $i -lt 50 ]; do  # 5 s
  left=""
  for p in $seen; do alive "$p" && left="$left $p"; done
  [ -z "$left" ] && break
  sleep 0.1
  i=$((i + 1))
done
if [ -n "$left" ]; then
  for p in $left; do echo "left running: $(ps -o pid=,ppid=,stat=,args= -p "$p")"; done
  for p in $left; do kill -KILL "$p" 2>/dev/null; done
  fail "descendants of the killed bench still run after 5 s:$left"
fi
echo "every descendant is gone"
