#!/bin/sh
# Shows that check_layers.sh catches the links that break the layers: on a copy of the
# library's sources it plants an upward link through a public header in a core file and in a
# core public header, and in the components an include of the engine above core (vision/ ->
# loader/), the Loader's public header (parquet/), the supervisor (remote/ -> supervise/), a
# component shards/ does not name (hdf5/, a folder whose name holds a digit), and one through a
# component's public header (hdf5/ -> <mploader/parquet/...>); it prints what the check said and
# its exit status. Usage: check_layers_planted.sh <source root> [check script] (the second
# argument: another check to run, to compare).
root=$1
check=${2:-$root/tests/data/check_layers.sh}
copy=$(mktemp -d) || exit 2
trap 'rm -rf "$copy"' EXIT
for folder in util ipc core sampler datasets worker process supervise loader device components \
              include; do
  cp -r "$root/$folder" "$copy/"
done
printf '#include <mploader/loader.h>\n' >> "$copy/core/tensor_dict.cc"
printf '#include <mploader/worker_info.h>\n' >> "$copy/include/mploader/dataset.h"
printf '#include "loader/dispatcher.h"\n' >> "$copy/components/vision/transforms.cc"
printf '#include <mploader/loader.h>\n' >> "$copy/components/parquet/pq_file.cc"
printf '#include "supervise/supervisor.h"\n' >> "$copy/components/remote/url.cc"
printf '#include "hdf5/h5_handle.h"\n' >> "$copy/components/shards/tar_reader.cc"
printf '#include <mploader/parquet/parquet_shards.h>\n' \
  >> "$copy/components/hdf5/include/mploader/hdf5/h5_dataset.h"
sh "$check" "$copy"
echo "check_layers exit status $?"
