#!/bin/sh
# Builds tests/consumer against mploader one way and runs it (ctest "consumer: ...").
# Usage: check.sh MODE SOURCE_DIR WORK_DIR OUTER_BUILD_DIR BUILD_TYPE SANITIZE CXX TORCH_DIR LEAN
#   MODE package: `cmake --install OUTER_BUILD_DIR` into WORK_DIR/prefix, then find_package,
#     which finds the libtorch mploader was built with (TORCH_DIR) by itself;
#   MODE subdir / fetch: add_subdirectory / FetchContent of SOURCE_DIR, given -DTorch_DIR and
#     the outer build's MPLOADER_SANITIZE and MPLOADER_LEAN_DEBUG_INFO (LEAN), whose flags the
#     library's objects must share to come from ccache.
# Either way the consumer must end up with TORCH_DIR, the outer build's libtorch.
# WORK_DIR/build is kept between runs, so a second run rebuilds only what changed.
set -eu
mode=$1 src=$2 work=$3 outer=$4 build_type=$5 sanitize=$6 cxx=$7 torch_dir=$8 lean=$9
build=$work/build
mkdir -p "$work"
# ccache keys -g objects by folder unless told otherwise (CCACHE_NOHASHDIR): without it, the
# library the subdir and fetch builds compile could not hit what the other one cached.
export CCACHE_NOHASHDIR=true
# The library's files use a precompiled header made in this build (cmake/precompile.cmake):
# ccache caches them with these sloppinesses only, and the subdir and fetch builds share them
# when the header's path is relative to the build folder, the same in both.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR="$build"
launcher=
command -v ccache >/dev/null 2>&1 && launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
case $mode in
  package)
    rm -rf "$work/prefix"
    cmake --install "$outer" --prefix "$work/prefix" >"$work/install.log" ||
      { cat "$work/install.log"; exit 1; }
    # mploader-report, when the build has the tools: the cache says, not a binary that an
    # earlier configuration of the same folder may have left.
    report=
    grep -q '^MPLOADER_BUILD_TOOLS:BOOL=ON$' "$outer/CMakeCache.txt" && report=bin/mploader-report
    for f in include/mploader/mploader.h lib/cmake/mploader/mploaderConfig.cmake \
             lib/cmake/mploader/mploaderConfigVersion.cmake $report; do
      [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
    done
    # The installed bench runs PyTorch's DataLoader through the script installed beside it.
    if [ -e "$work/prefix/bin/mploader-bench" ] &&
       [ ! -e "$work/prefix/share/mploader/pytorch_dataloader.py" ]; then
      echo "not installed: share/mploader/pytorch_dataloader.py"; exit 1
    fi
    extra="-DCMAKE_PREFIX_PATH=$work/prefix" ;;
  subdir|fetch)
    extra="-DMPLOADER_SOURCE_DIR=$src -DMPLOADER_SANITIZE=$sanitize -DTorch_DIR=$torch_dir"
    extra="$extra -DMPLOADER_LEAN_DEBUG_INFO=$lean" ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
# shellcheck disable=SC2086
cmake -S "$src/tests/consumer" -B "$build" -DMPLOADER_CONSUME="$mode" \
  -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_COMPILER="$cxx" $launcher $extra \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
used=$(sed -n 's/^-- consumer: libtorch .* from Torch_DIR=//p' "$work/configure.log")
if [ -z "$used" ] || [ "$(realpath "$used")" != "$(realpath "$torch_dir")" ]; then
  echo "the consumer found libtorch in $used, mploader was built with $torch_dir"; exit 1
fi
cmake --build "$build" -j2 --target consumer >"$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; exit 1; }
"$build/consumer"
