#!/bin/sh
# The pinned-memory path compiled with the CUDA runtime wheel's headers, as on a machine with no
# CUDA toolkit (ctest "cuda: ..." in tests/torch.cmake): configures mploader with CMake's
# CUDAToolkit search switched off, checks that the configure names the wheel, then compiles
# util/cuda_pinning.cc against it. Prints "cuda wheel build ok" at the end.
# Usage: check_cuda_wheel.sh SOURCE_DIR WORK_DIR TORCH_DIR
set -eu
src=$1 work=$2 torch_dir=$3
mkdir -p "$work"
export CCACHE_NOHASHDIR=true
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTorch_DIR="$torch_dir" \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DMPLOADER_BUILD_TESTS=OFF \
  -DMPLOADER_BUILD_BENCH=OFF -DMPLOADER_BUILD_EXAMPLES=OFF -DMPLOADER_BUILD_TOOLS=OFF \
  -DMPLOADER_INSTALL=OFF -DMPLOADER_PRECOMPILE_HEADERS=OFF >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
line=$(grep "mploader: CUDA pinning" "$work/configure.log" || true)
echo "$line"
case $line in
  *"CUDA runtime wheel"*) ;;
  *"pinning off"*) echo "skipped: no nvidia-cuda-runtime wheel in .venv (scripts/install-deps)"; exit 0 ;;
  *) echo "the configure did not take the wheel's headers"; exit 1 ;;
esac
# cuda_pinning.cc is the one file that includes cuda_runtime_api.h: its object is the check.
make -C "$work/build" util/cuda_pinning.cc.o >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; exit 1; }
grep -q 'MPLOADER_WITH_CUDA=1.*cuda_pinning.cc' "$work/build/compile_commands.json" ||
  { echo "cuda_pinning.cc was compiled without MPLOADER_WITH_CUDA=1"; exit 1; }
echo "cuda wheel build ok"
