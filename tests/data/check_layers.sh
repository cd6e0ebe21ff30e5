#!/bin/sh
# The library's folders are layers (docs/ARCHITECTURE.md): a file may include its own folder
# and the folders listed before it, never one after. A public header (include/mploader/) belongs
# to the layer that implements it, and counts as that layer: a library file may include it only
# from that layer or above, and a public header may include only public headers of its layer or
# below, so no upward link hides behind one. Prints each include that breaks the order; "layers
# hold" when none does. Usage: check_layers.sh <source root>
cd "$1" || exit 2
layers="util ipc core sampler datasets worker process supervise loader device vision remote shards hdf5 parquet"
rank() { i=0; for l in $layers; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i+1)); done; echo -1; }
# The layer of each public header (its path under include/mploader/); empty: not mapped yet.
public_layer() {
  case "$1" in
    errors.h|logging.h) echo util ;;
    batch.h|collate.h|dataset.h|loading_context.h|mixture_end.h|registry.h|sample_writer.h|\
    streaming.h|tensor_dict.h|stage_timer.h) echo core ;;
    bucket_sampler.h|distributed_sampler.h|elastic_sampler.h|launch_info.h|mixture.h|rank_agreement.h|\
    sampler.h) echo sampler ;;
    compose.h|npy.h|stream_mixture.h|token_stream.h) echo datasets ;;
    worker_info.h) echo worker ;;
    start_method.h) echo process ;;
    stats.h) echo supervise ;;
    elastic.h|loader.h|options.h|tune.h) echo loader ;;
    device_prefetcher.h|mploader.h) echo device ;;
    vision/*) echo vision ;;
    remote/*) echo remote ;;
    shards/*) echo shards ;;
    hdf5/*) echo hdf5 ;;
    parquet/*) echo parquet ;;
  esac
}
bad=0
# check <file> <its layer>: every include, quoted (a folder) or <mploader/...> (a public header).
check() {
  own=$(rank "$2")
  for used in $(sed -n 's|^#include "\([a-z_]*\)/.*|\1|p' "$1" | sort -u); do
    r=$(rank "$used")
    if [ "$r" -lt 0 ] || [ "$r" -gt "$own" ]; then
      echo "$1 includes $used/, a layer above $2/ (or no layer): move the code down"
      bad=1
    fi
  done
  for header in $(sed -n 's|^#include <mploader/\([a-z_/]*\.h\)>.*|\1|p' "$1" | sort -u); do
    layer=$(public_layer "$header")
    if [ -z "$layer" ]; then
      echo "$1 includes <mploader/$header>, which has no layer in $0: give it one"
      bad=1
    elif [ "$(rank "$layer")" -gt "$own" ]; then
      echo "$1 includes <mploader/$header>, implemented in $layer/, a layer above $2/:" \
           "move the code down, or split the header"
      bad=1
    fi
  done
}
for folder in $layers; do
  for file in "$folder"/*.h "$folder"/*.cc; do
    [ -f "$file" ] && check "$file" "$folder"
  done
done
for file in $(cd include/mploader && find . -name '*.h' | sed 's|^\./||' | sort); do
  layer=$(public_layer "$file")
  if [ -z "$layer" ]; then
    echo "include/mploader/$file has no layer in $0: give it the layer that implements it"
    bad=1
  else
    check "include/mploader/$file" "$layer"
  fi
done
# Each layer says what it is for in the first line of one of its files: "// <folder>/: ...".
for folder in $layers; do
  if ! head -qn1 "$folder"/*.h "$folder"/*.cc 2>/dev/null | grep -q "^// $folder/: "; then
    echo "$folder/ has no file whose first line says its purpose (// $folder/: ...)"; bad=1
  fi
done
# A new folder must be given its place in the order.
for folder in */; do
  folder=${folder%/}
  case " $layers include bench tests fuzz tools examples docs configs cmake scripts build " in
    *" $folder "*) ;;
    *) case "$folder" in build*) ;; *) ls "$folder"/*.cc >/dev/null 2>&1 && {
         echo "$folder/ holds library code but has no place in the layer order of $0"; bad=1; } ;;
       esac ;;
  esac
done
[ $bad -eq 0 ] && echo "layers hold"
exit $bad
