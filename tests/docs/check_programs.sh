#!/bin/sh
# Compiles and links every "cpp program" block of README.md and docs/*.md against a
# `cmake --install` of the build (ctest "docs: the documentation's complete programs ...").
# Usage: check_programs.sh SOURCE_DIR WORK_DIR OUTER_BUILD_DIR BUILD_TYPE CXX PYTHON [JOBS]
# WORK_DIR/build is kept between runs, so a second run compiles only the programs that changed.
set -eu
src=$1 work=$2 outer=$3 build_type=$4 cxx=$5 python=$6 jobs=${7:-2}
mkdir -p "$work"
launcher=
command -v ccache >/dev/null 2>&1 && launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
rm -rf "$work/prefix"
cmake --install "$outer" --prefix "$work/prefix" >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
"$python" "$src/tests/docs/extract_programs.py" "$src" "$work/project" >"$work/programs.txt" ||
  { cat "$work/programs.txt"; exit 1; }
cat "$work/programs.txt"
cmake -S "$work/project" -B "$work/build" -DCMAKE_BUILD_TYPE="$build_type" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" $launcher \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j"$jobs" >"$work/build.log" 2>&1 ||
  { grep -B2 -A12 -m5 "error" "$work/build.log" || tail -60 "$work/build.log"; exit 1; }
echo "docs programs ok: $(tail -1 "$work/programs.txt") compile and link against the installed package"
