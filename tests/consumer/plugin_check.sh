#!/bin/sh
# A dataset library built out of tree against the installed package, tuned by the installed
# mploader-bench (ctest "plugin: ..."): examples/dataset_plugin, then the libraries the bench
# must refuse (tests/consumer/plugins), each with the error that names it.
# Usage: plugin_check.sh SOURCE_DIR WORK_DIR OUTER_BUILD_DIR BUILD_TYPE CXX
set -eu
src=$1 work=$2 outer=$3 build_type=$4 cxx=$5
prefix=$work/prefix
mkdir -p "$work"
export CCACHE_NOHASHDIR=true
launcher=
command -v ccache >/dev/null 2>&1 && launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
rm -rf "$prefix"
cmake --install "$outer" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
bench=$prefix/bin/mploader-bench
[ -x "$bench" ] || { echo "not installed: bin/mploader-bench"; exit 1; }

# Configures and builds one project against the installed package.
build() {  # SOURCE BUILD_DIR
  # shellcheck disable=SC2086
  cmake -S "$1" -B "$2" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_CXX_COMPILER="$cxx" $launcher >"$2.configure.log" 2>&1 ||
    { cat "$2.configure.log"; exit 1; }
  cmake --build "$2" -j2 >"$2.build.log" 2>&1 || { tail -40 "$2.build.log"; exit 1; }
}
fail() { echo "FAIL: $*"; exit 1; }

build "$src/examples/dataset_plugin" "$work/example"
lib=$work/example/libexample_datasets.so
# One copy of mploader, the bench's: the library defines none of mploader's functions or
# variables (T, D, B), only what the headers define inline (W).
if nm -DC --defined-only "$lib" | grep -E ' [TDB] mploader::'; then
  fail "libexample_datasets.so defines mploader's functions itself"
fi

# Tuned like a built-in workload: a sweep, then the recommendation as a JSON record.
config="size=2048 length=1024 classes=10"
"$bench" --dataset-lib "$lib" --dataset example.sines --dataset-config "$config" \
  --workers 0,1,2 --loader mploader,inprocess,libtorch,pytorch --batch-size 32 --batches 40 \
  --json >"$work/tune.jsonl" 2>"$work/tune.err" || { cat "$work/tune.err"; fail "tuning"; }
grep -q "skipping loader pytorch: .*--dataset-lib dataset exists only in C++" "$work/tune.err" ||
  { cat "$work/tune.err"; fail "no word on the pytorch rows"; }
python3 - "$work/tune.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [l for l in lines if "record" not in l]
recs = [l for l in lines if l.get("record") == "recommendation"]
assert {r["workload"] for r in rows} == {"example.sines"}, rows
assert sorted({r["loader"] for r in rows}) == ["inprocess", "libtorch", "mploader"], rows
rec = [r for r in recs if r["loader"] == "mploader"]
assert len(rec) == 1, recs
rec = rec[0]
budget = rec["cpu_budget"] or 1 << 30
best = max(r["samples_per_s"] for r in rows
           if r["loader"] == "mploader" and r["workers"] <= budget)
assert rec["samples_per_s"] >= 0.95 * best, (rec, best)
print("recommended workers=%d at %.0f samples/s, best %.0f" %
      (rec["workers"], rec["samples_per_s"], best))
PY

# A spawned worker is the bench started again: it loads the library too, and rebuilds the
# dataset from its recipe, through the same registry. Its batches match fork's.
sums=
for start in fork spawn; do
  "$bench" --dataset-lib "$lib" --dataset example.sines --dataset-config "$config" \
    --workers 2 --loader mploader --start $start --batches 6 --checksum --json \
    >"$work/$start.jsonl" 2>"$work/$start.err" || { cat "$work/$start.err"; fail "$start"; }
  sums="$sums $(python3 -c 'import json, sys
print(json.loads(open(sys.argv[1]).readline())["checksum"])' "$work/$start.jsonl")"
done
set -- $sums
[ "$1" = "$2" ] || fail "spawn's batches differ from fork's: $1 vs $2"

# The installed mploader-pack packs the library's dataset: every sample in one shard list.
pack=$prefix/bin/mploader-pack
[ -x "$pack" ] || { echo "not installed: bin/mploader-pack"; exit 1; }
rm -rf "$work/packed"
"$pack" --dataset-lib "$lib" --dataset example.sines --dataset-config "size=300 length=64" \
  --shard-size 16KB -o "$work/packed" >"$work/pack.out" 2>"$work/pack.err" ||
  { cat "$work/pack.err"; fail "packing the library's dataset"; }
grep -q "wrote $work/packed: 300 samples in" "$work/pack.out" || { cat "$work/pack.out"; fail "pack"; }
python3 - "$work/packed/mploader-pack.json" <<'PY'
import json, sys
pack = json.load(open(sys.argv[1]))
assert pack["samples"] == 300 and len(pack["shards"]) > 1, pack
assert [f["name"] for f in pack["fields"]] == ["signal", "label"], pack["fields"]
PY
status=0
"$pack" --dataset-lib "$lib" --dataset nope -o "$work/nope" 2>"$work/pack.err" || status=$?
[ "$status" = 2 ] && grep -qF "registers no dataset named 'nope'. Give one it registers: example.sines" \
  "$work/pack.err" || { cat "$work/pack.err"; fail "pack --dataset nope: exit $status"; }

# Each mistake ends in its own message and exit status.
refused() {  # STATUS TEXT ARGS...: the bench must exit with STATUS and print TEXT
  want=$1 text=$2
  shift 2
  status=0
  "$bench" --batches 4 --workers 1 --loader mploader "$@" >"$work/refused.out" \
    2>"$work/refused.err" || status=$?
  [ "$status" = "$want" ] || { cat "$work/refused.err"; fail "exit $status, not $want: $*"; }
  grep -qF -- "$text" "$work/refused.err" || { cat "$work/refused.err"; fail "no '$text'"; }
}
refused 2 "cannot open '$work/missing.so'" --dataset-lib "$work/missing.so" --dataset x
refused 2 "registers no dataset named 'nope'; it registers: example.sines" \
  --dataset-lib "$lib" --dataset nope
refused 2 "--dataset: needs --dataset-lib" --dataset example.sines
refused 2 "give --dataset NAME too, one of the datasets '$lib' registers: example.sines" \
  --dataset-lib "$lib"
refused 2 "--workload: not with --dataset" \
  --dataset-lib "$lib" --dataset example.sines --workload fmnist
refused 1 "its factory threw: example.sines: length='-3' is not a whole number" \
  --dataset-lib "$lib" --dataset example.sines --dataset-config "length=-3"
build "$src/tests/consumer/plugins" "$work/refused"
refused 2 "registers no dataset. Register each with MPLOADER_REGISTER_DATASET" \
  --dataset-lib "$work/refused/libempty_plugin.so" --dataset x
refused 2 "registers dataset 'bench-synthetic', a name that mploader-bench" \
  --dataset-lib "$work/refused/libduplicate_plugin.so" --dataset bench-synthetic
refused 2 "holds a copy of mploader of its own" \
  --dataset-lib "$work/refused/libown_copy_plugin.so" --dataset bench-synthetic
echo "plugin ok: tuned out of tree, same batches under spawn, packed, 9 mistakes refused"
