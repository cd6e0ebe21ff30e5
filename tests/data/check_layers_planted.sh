#!/bin/sh
# Shows that check_layers.sh catches an upward link through a public header: on a copy of the
# library's sources it plants one in a core file and one in a core public header, and prints
# what the check said and its exit status. Usage: check_layers_planted.sh <source root>
root=$1
copy=$(mktemp -d) || exit 2
trap 'rm -rf "$copy"' EXIT
for folder in util ipc core sampler datasets worker process supervise loader device vision shards \
              include; do
  cp -r "$root/$folder" "$copy/"
done
printf '#include <mploader/loader.h>\n' >> "$copy/core/tensor_dict.cc"
printf '#include <mploader/worker_info.h>\n' >> "$copy/include/mploader/dataset.h"
sh "$root/tests/data/check_layers.sh" "$copy"
echo "check_layers exit status $?"
