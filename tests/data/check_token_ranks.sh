#!/bin/sh
# Checks mploader-bench --workload tokens across ranks: runs every rank of a world with the
# distributed-bucket sampler and --dump-indices, and one process with the bucket sampler, then
# compares: every rank must have the same number of batches, and together the ranks must cover
# exactly the samples the single process covers (repeats only from padding).
# Usage: check_token_ranks.sh BENCH WORLD OUTDIR [more bench options]
# Prints "ok: ..." and exits 0, or "FAIL: ..." and exits 1.
set -eu
bench=$1 world=$2 dir=$3
shift 3
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/bench.log
run() {
  if ! "$@" >/dev/null 2>>"$log"; then
    echo "FAIL: $* did not succeed:"
    cat "$log"
    exit 1
  fi
}
run "$bench" --workload tokens --sampler bucket --workers 0 --dump-indices "$dir/single.txt" "$@"
r=0
while [ "$r" -lt "$world" ]; do
  run "$bench" --workload tokens --sampler distributed-bucket --world-size "$world" --rank "$r" \
    --workers 1 --dump-indices "$dir/rank$r.txt" "$@"
  r=$((r + 1))
done
lines=$(for f in "$dir"/rank*.txt; do wc -l <"$f"; done | sort -u)
single=$(tr ' ' '\n' <"$dir/single.txt" | sort -n | uniq | wc -l)
union=$(cat "$dir"/rank*.txt | tr ' ' '\n' | sort -n | uniq | wc -l)
total=$(cat "$dir"/rank*.txt | wc -w)
if [ "$(echo "$lines" | wc -l)" -ne 1 ]; then
  echo "FAIL: ranks have different batch counts:" $lines
  exit 1
fi
if [ "$union" -ne "$single" ] || [ "$single" -eq 0 ]; then
  echo "FAIL: the ranks cover $union samples, one process covers $single"
  exit 1
fi
echo "ok: $world ranks x $lines batches, $union samples covered, $((total - union)) repeated"
