#!/bin/sh
# mploader-bench with --start fork, spawn and forkserver must deliver the same batches: the
# checksum over every batch's bytes is equal, and it differs for a different run (so the
# comparison can fail). Usage: check_start_methods.sh BENCH
set -u
bench=$1
run() {
  "$bench" --workload synthetic --sample-shape 3,16,16 --batch-size 8 --batches "$2" \
    --workers 2 --loader mploader --start "$1" --checksum --json 2>/dev/null |
    sed -n 's/.*"checksum":"\([0-9a-f]*\)".*/\1/p'
}
fork=$(run fork 30); spawn=$(run spawn 30); forkserver=$(run forkserver 30); other=$(run fork 31)
echo "fork=$fork spawn=$spawn forkserver=$forkserver other=$other"
[ -n "$fork" ] && [ "$fork" = "$spawn" ] && [ "$fork" = "$forkserver" ] && [ "$fork" != "$other" ] &&
  echo "same batches"
