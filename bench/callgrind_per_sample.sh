#!/usr/bin/env bash
# Instructions per sample, from valgrind's callgrind (instruction counts repeat run to run on a
# noisy machine, where timings do not). For each workload it runs mploader with one forked
# worker twice: in place ("mploader": Dataset::write_batch into the slot) and from samples
# ("mploader-get": Dataset::get, then collation copies into the slot), and splits each sample's
# instructions into
#   dataset   Dataset::get / write / write_batch, inclusive (the workload's own work),
#   worker    the rest of the worker process's life after the fork (mploader's assembly,
#             planning, copies, publishing, waiting for tasks),
#   main      the training process's Loader::next (receiving, the Batch views, the loop).
# Under valgrind, memcpy and memset are its own simple loops (about one instruction per byte or
# word), so moving bytes shows as many instructions here and costs far less natively: compare
# the shares that move no bytes, or count the bytes.
# Usage: bench/callgrind_per_sample.sh [build-dir] [workload...]   (default: build, all three)
set -euo pipefail
build=${1:-build}
shift || true
workloads=("${@:-synthetic fmnist jpeg}")
# shellcheck disable=SC2206
workloads=(${workloads[*]})
bench="$build/bench/mploader-bench"
[[ -x $bench ]] || { echo "no $bench: build the bench first (cmake --build $build)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

# Inclusive instructions of the functions whose names match `pattern` in callgrind file $1: the
# sum over the matching functions' own entries (those naming their object file; the others
# split a function by the files its inlined code came from).
# Run from / with an absolute path: from inside the source tree, callgrind_annotate names files
# relatively and splits a function's entry differently (a smaller inclusive count).
inclusive() {
  (cd / && callgrind_annotate --inclusive=yes --threshold=100 "$(realpath "$1")" 2>/dev/null) |
    awk -v pat="$2" '$0 ~ pat && $0 ~ / \[\// { gsub(",", "", $1); sum += $1 } END { printf "%.0f\n", sum }'
}

declare -A batch=([synthetic]=64 [fmnist]=256 [jpeg]=64)
declare -A batches=([synthetic]=24 [fmnist]=40 [jpeg]=6)
printf '%-10s %-13s %10s %10s %10s %10s\n' workload loader dataset worker main total
for w in "${workloads[@]}"; do
  for loader in mploader-get mploader; do
    dir=$(mktemp -d)
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" --trace-children=no \
      "$bench" --workload "$w" --loader "$loader" --workers 1 --batch-size "${batch[$w]}" \
      --batches "${batches[$w]}" --prefetch 2 --json >/dev/null 2>"$dir/log" ||
      { echo "valgrind run failed; see $dir/log" >&2; exit 1; }
    samples=$(( ${batch[$w]} * ${batches[$w]} ))
    worker_total=0 dataset=0 main=0
    for f in "$dir"/cg.*; do  # the bench, its run process, the slot probe, the worker
      task=$(inclusive "$f" 'mploader::worker::run_worker\\(')
      if (( task > worker_total )); then
        worker_total=$task
        dataset=$(inclusive "$f" 'bench::[A-Za-z]+Dataset::(get|write|write_batch)\\(')
      fi
      next=$(inclusive "$f" 'mploader::Loader::next\\(\\)')
      (( next > main )) && main=$next
    done
    printf '%-10s %-13s %10d %10d %10d %10d\n' "$w" "$loader" $(( dataset / samples )) \
      $(( (worker_total - dataset) / samples )) $(( main / samples )) \
      $(( (worker_total + main) / samples ))
    rm -rf "$dir"
  done
done
