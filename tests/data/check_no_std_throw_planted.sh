#!/bin/sh
# Shows that check_no_std_throw.sh fails on a planted `throw std::runtime_error`: on a copy of
# the library's sources it plants one in the engine (core/) and one in a component (vision/),
# keeps the standard exceptions that tests/ and bench/ may throw, and prints what the check
# said and its exit status. Usage: check_no_std_throw_planted.sh <source root>
root=$1
copy=$(mktemp -d) || exit 2
trap 'rm -rf "$copy"' EXIT
for folder in util ipc core sampler datasets worker process supervise loader device include \
              components; do
  cp -r "$root/$folder" "$copy/"
done
printf 'void planted() { throw std::runtime_error("planted"); }\n' >> "$copy/core/tensor_dict.cc"
printf 'inline void planted() { throw std::logic_error("planted"); }\n' \
  >> "$copy/components/vision/include/mploader/vision/image.h"
sh "$root/tests/data/check_no_std_throw.sh" "$copy"
echo "check_no_std_throw exit status $?"
