#!/bin/sh
# mploader-bench's jpeg workload end to end, on small sets:
#   1. a tiny sweep on a generated set writes a parsable CSV (header + one row per run),
#      the plot's .gp and .dat, and prints a recommendation;
#   2. a run that goes through the set 3 times says so, with the count;
#   3. a folder with a truncated JPEG and a text file named .jpg runs to the end, counting the
#      bad samples and naming the files;
#   4. configs/jpeg-sweep.toml is accepted (its keys are options), overridden to a tiny run.
# Usage: check_bench_jpeg.sh BENCH WORKDIR CONFIG
set -eu
bench=$1 work=$2 config=$3
rm -rf "$work" && mkdir -p "$work"
export MPLOADER_BENCH_CACHE="$work/cache"
fail() { echo "FAIL: $*"; exit 1; }

"$bench" --workload jpeg --jpeg-count 48 --batch-size 8 --batches 3 --workers 1,2 \
  --prefetch 1,2 --loader mploader,inprocess --csv "$work/out.csv" --plot "$work/plot.png" \
  >"$work/table.txt" 2>"$work/err.txt" || { cat "$work/err.txt"; fail "sweep exited $?"; }
head -1 "$work/out.csv" | grep -q '^loader,workload,workers,batch_size,prefetch,samples_per_s' \
  || fail "csv header: $(head -1 "$work/out.csv")"
rows=$(awk -F, 'NR > 1 && NF == 23 && $6 > 0' "$work/out.csv" | wc -l)
[ "$rows" -eq 8 ] || fail "csv: expected 8 rows of 23 fields with samples_per_s > 0, got $rows"
# mploader rows split their busy time by stage: decoding and transforms take time in jpeg.
split=$(awk -F, 'NR > 1 && $1 == "mploader" && $19 > 0 && $20 > 0' "$work/out.csv" | wc -l)
[ "$split" -eq 4 ] || fail "csv: expected 4 mploader rows with decode_ms and transform_ms > 0"
[ -s "$work/plot.gp" ] && [ -s "$work/plot.dat" ] || fail "plot script or data missing"
grep -q "Recommended num_workers" "$work/table.txt" || fail "no recommendation"
grep -q "mploader jpeg batch=8 prefetch=1: num_workers=[12]" "$work/table.txt" \
  || fail "no mploader recommendation: $(cat "$work/table.txt")"
! grep -q "went through" "$work/err.txt" ||
  fail "one epoch said to be several: $(cat "$work/err.txt")"

# 18 batches of 8 from 48 images are 3 epochs: said, with the count and the remedy.
"$bench" --workload jpeg --jpeg-count 48 --batch-size 8 --batches 18 --workers 1 \
  --loader mploader >/dev/null 2>"$work/epochs.txt" ||
  { cat "$work/epochs.txt"; fail "epochs run"; }
said="jpeg: a run of 18 batches of 8 went through the 48-sample dataset 3 times"
grep -q "$said .*--batches 6 or fewer" "$work/epochs.txt" ||
  fail "no epoch count: $(cat "$work/epochs.txt")"

bad="$work/bad"
mkdir -p "$bad/a"
for f in $(find "$work/cache" -name '*.jpg' | sort | head -6); do cp "$f" "$bad/a/"; done
good=$(find "$bad/a" -name '*.jpg' | head -1)
head -c 2000 "$good" >"$bad/a/truncated.jpg"
echo "not a jpeg" >"$bad/a/text.jpg"
"$bench" --workload jpeg --data-dir "$bad" --batch-size 8 --batches 2 --workers 1 \
  --loader mploader >"$work/bad.txt" 2>&1 || { cat "$work/bad.txt"; fail "corrupt files were fatal"; }
grep -q "came from unreadable or corrupt files" "$work/bad.txt" || fail "corrupt not reported: $(cat "$work/bad.txt")"
grep -q "text.jpg" "$work/bad.txt" && grep -q "truncated.jpg" "$work/bad.txt" \
  || fail "corrupt files not named: $(cat "$work/bad.txt")"

"$bench" --config "$config" --jpeg-count 48 --batch-size 8 --batches 2 --workers 1 \
  --prefetch 2 --loader inprocess --csv "$work/cfg.csv" --plot "$work/cfg.png" \
  >"$work/cfg.txt" 2>&1 || { cat "$work/cfg.txt"; fail "the jpeg-sweep config failed"; }
echo "jpeg checks passed"
