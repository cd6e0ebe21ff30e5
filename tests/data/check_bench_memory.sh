#!/bin/sh
# The bench workloads run 20 epochs each through mploader (2 persistent fork workers) and the
# loader must raise no memory-growth warning: the warning is for datasets that keep memory,
# and none of these does. Each workload's epoch length comes from a first short run's
# dataset_size. synthetic is sized to the run (one epoch of 20 epochs' samples).
# Prints one line per workload with its private-memory growth from the start of epoch 2 (the
# loader samples every worker at each epoch's start, however short the epochs).
# Usage: check_bench_memory.sh BENCH CACHE_DIR
set -u
bench=$1
export MPLOADER_BENCH_CACHE=$2
failed=0
run() {  # workload batch-size extra-args... -> the JSON line of a 20-epoch run
  workload=$1 batch=$2; shift 2
  size=$("$bench" --workload "$workload" --loader mploader --workers 2 --batch-size "$batch" \
           --batches 2 --json "$@" 2>/dev/null | sed -n 's/.*"dataset_size":\([0-9]*\).*/\1/p')
  [ -n "$size" ] || { echo "$workload: the short run failed"; failed=1; return; }
  batches=$(( size / batch * 20 ))
  "$bench" --workload "$workload" --loader mploader --workers 2 --batch-size "$batch" \
    --batches "$batches" --json "$@" >"$MPLOADER_BENCH_CACHE/$workload.json" \
    2>"$MPLOADER_BENCH_CACHE/$workload.log"
  line=$(cat "$MPLOADER_BENCH_CACHE/$workload.json")
  epochs=$(echo "$line" | sed -n 's/.*"epochs":\([0-9]*\).*/\1/p')
  warnings=$(echo "$line" | sed -n 's/.*"memory_growth_warnings":\([0-9]*\).*/\1/p')
  growth=$(echo "$line" | sed -n 's/.*"worker_private_growth_mb":\([-0-9.e+]*\).*/\1/p')
  echo "$workload: $batches batches of $batch, $epochs epochs, $warnings memory warnings, worker private memory grew ${growth} MiB after epoch 1 (at most, of 2 workers)"
  if [ "$warnings" != 0 ] || grep -q "keeps growing its private memory" "$MPLOADER_BENCH_CACHE/$workload.log"; then
    cat "$MPLOADER_BENCH_CACHE/$workload.log"; failed=1
  fi
  if [ "$workload" != synthetic ] && [ "${epochs:-0}" -lt 20 ]; then
    echo "$workload: only ${epochs:-0} epochs"; failed=1
  fi
  # The loader samples every worker at each epoch's start: the growth must have been measured.
  if [ "$workload" != synthetic ] && [ "${growth:--1.0}" = "-1.0" ]; then
    echo "$workload: worker memory was not sampled at the epochs' starts"; failed=1
  fi
}
mkdir -p "$MPLOADER_BENCH_CACHE"
run fmnist 256
run jpeg 8 --jpeg-count 96
run tar 8 --jpeg-count 96
run stream 64 --context 1024
run synthetic 32 --sample-shape 3,64,64
[ "$failed" = 0 ] && echo "no memory warnings in 20 epochs of any workload"
