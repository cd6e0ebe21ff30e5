#!/bin/sh
# Configures mploader against a libtorch that cannot work and prints what CMake said, then
# "configure exit status N" (ctest "torch: ..." in tests/torch.cmake checks the message).
# Usage: check_bad_torch.sh CASE SOURCE_DIR WORK_DIR GOOD_TORCH_DIR
#   missing:  Torch_DIR is a libtorch's root, not the folder with TorchConfig.cmake
#   cuda:     a "CUDA build" whose libtorch_cuda.so needs a CUDA library this machine lacks
#   precxx11: a libtorch built with the pre-C++11 string ABI
# The fake libtorchs are the good one's headers and configs, with libraries made here.
set -eu
case=$1 src=$2 work=$3 good=$4
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/fake_libtorch.sh"
fake=$work/libtorch
make_fake_libtorch "$good" "$fake"
torch_dir=$fake/share/cmake/Torch
case $case in
  missing) torch_dir=$fake ;;
  cuda)
    # libtorch_cuda.so needing libcudnn_mploader_test.so.9, which exists only while linking.
    echo 'void mploader_fake_cudnn(void) {}' > "$work/cudnn.c"
    echo 'void mploader_fake_cudnn(void); void f(void) { mploader_fake_cudnn(); }' > "$work/cuda.c"
    mkdir -p "$work/gone"
    cc -shared -fPIC -o "$work/gone/libcudnn_mploader_test.so.9" \
       -Wl,-soname,libcudnn_mploader_test.so.9 "$work/cudnn.c"
    cc -shared -fPIC -o "$fake/lib/libtorch_cuda.so" "$work/cuda.c" \
       "$work/gone/libcudnn_mploader_test.so.9"
    rm -rf "$work/gone" ;;
  precxx11)
    printf 'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")\n' >> "$fake/share/cmake/Caffe2/Caffe2Config.cmake" ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
status=0
cmake -S "$src" -B "$work/build" -DTorch_DIR="$torch_dir" -DMPLOADER_BUILD_TESTS=OFF \
  -DMPLOADER_BUILD_BENCH=OFF -DMPLOADER_BUILD_EXAMPLES=OFF -DMPLOADER_BUILD_TOOLS=OFF \
  >"$work/out.log" 2>&1 || status=$?
cat "$work/out.log"
echo "configure exit status $status"
