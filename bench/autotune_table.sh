#!/bin/sh
# The autotuner against the best fixed worker count, workload by workload, each in one run of
# mploader-bench: fmnist, jpeg, stream, io (reads with 2 ms latency), io with CPU work (0.3 ms
# of CPU and 1.5 ms of latency per sample, rated over the second half of its 800 batches) and
# a slow consumer (fmnist with a 20 ms training step), every configuration REPEAT times
# (default 3; the median run kept). Prints each run's "autotuned" section.
#   [REPEAT=N] bench/autotune_table.sh [BUILD_DIR]     (default: build)
set -eu
bench="${1:-build}/bench/mploader-bench"
[ -x "$bench" ] || { echo "no $bench: build with MPLOADER_BUILD_BENCH=ON" >&2; exit 2; }
run() {
  label="$1"; shift
  echo "== $label: $*"
  "$bench" --loader mploader --autotune --prefetch 2,4 --repeat "${REPEAT:-3}" "$@" 2>/dev/null |
    sed -n '/^autotuned/,/^  (settled/p'
}
run fmnist --workload fmnist --workers 1,2,3 --batch-size 64 --batches 40000
run jpeg --workload jpeg --workers 1,2,3 --batch-size 32 --batches 400
run stream --workload stream --workers 1,2,3 --batch-size 64 --batches 20000
run io --workload io --workers 1,2,4,8 --batch-size 16 --batches 1600
run "io with CPU" --workload io --io-latency-us 1500 --io-cpu-us 300 --workers 2,4,8,16 \
  --batch-size 16 --batches 800
run "slow consumer" --workload fmnist --workers 1,2,3 --batch-size 64 --batches 300 --step-ms 20
