#!/bin/sh
# The jpeg workload's random crops and flips must depend on the sample (and epoch), never on
# the process that loads it: num_workers 0, 1 and 2 with fork, and 2 with spawn, give the same
# checksum over every batch's bytes. 14 batches of 4 from 24 images span three epochs, so the
# epoch must reach the augmentation everywhere. A run of 13 batches must differ (so the
# comparison can fail). Usage: check_bench_jpeg_workers.sh BENCH WORKDIR
set -u
bench=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
export MPLOADER_BENCH_CACHE="$work/cache"
run() {
  "$bench" --workload jpeg --jpeg-count 24 --batch-size 4 --batches "$1" --workers "$2" \
    --start "$3" --loader mploader --checksum --json 2>/dev/null |
    sed -n 's/.*"checksum":"\([0-9a-f]*\)".*/\1/p'
}
w0=$(run 14 0 fork); w1=$(run 14 1 fork); w2=$(run 14 2 fork); spawn=$(run 14 2 spawn)
other=$(run 13 0 fork)
echo "workers0=$w0 workers1=$w1 workers2=$w2 spawn2=$spawn other=$other"
[ -n "$w0" ] && [ "$w0" = "$w1" ] && [ "$w0" = "$w2" ] && [ "$w0" = "$spawn" ] &&
  [ "$w0" != "$other" ] && echo "same batches"
