#!/bin/sh
# How a user names their own libtorch (docs/which-libtorch.md): configures mploader (library
# only) and prints the configure's "mploader: libtorch ..." line, for ctest "torch: ..." in
# tests/torch.cmake to match. Ends with "configure exit status N".
# Usage: check_torch_choice.sh HOW SOURCE_DIR WORK_DIR GOOD_TORCH_DIR
#   prefix:  -DCMAKE_PREFIX_PATH=<what torch.utils.cmake_prefix_path prints> (a wheel)
#   zip:     -DCMAKE_PREFIX_PATH=<the root of an unpacked zip> (a libtorch/ folder made from the
#            good one: include, lib, share/cmake)
#   env:     the CMAKE_PREFIX_PATH environment variable set to that zip root
set -eu
how=$1 src=$2 work=$3 good=$4
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/fake_libtorch.sh"
zip=$work/libtorch
make_fake_libtorch "$good" "$zip"
case $how in
  prefix) arg=$good_root/share/cmake env_path= ;;
  zip)    arg=$zip env_path= ;;
  env)    arg= env_path=$zip ;;
  *) echo "unknown case $how"; exit 2 ;;
esac
status=0
env ${env_path:+CMAKE_PREFIX_PATH="$env_path"} cmake -S "$src" -B "$work/build" \
  ${arg:+-DCMAKE_PREFIX_PATH="$arg"} -DMPLOADER_BUILD_TESTS=OFF -DMPLOADER_BUILD_BENCH=OFF \
  -DMPLOADER_BUILD_EXAMPLES=OFF -DMPLOADER_BUILD_TOOLS=OFF -DMPLOADER_INSTALL=OFF \
  >"$work/out.log" 2>&1 || status=$?
grep -e "mploader: libtorch" -e "Error" "$work/out.log" || cat "$work/out.log"
echo "configure exit status $status"
