#!/bin/sh
# The library's folders are layers (docs/ARCHITECTURE.md). The engine is a chain: a file may
# include its own folder and the engine folders listed before it, never one after. The
# components (components/<name>/, listed in components/list.cmake) sit beside it: a component's
# file may include only util/, ipc/ and core/, its own folder, and the components its
# CMakeLists.txt names in DEPENDS_ON. A public header belongs to the folder that implements it
# (include/mploader/ for the engine, components/<name>/include/mploader/<name>/ for a
# component), and counts as that folder: a library file may include it only where it could
# include that folder, and a public header may include only public headers it could. Prints each
# include that breaks the rule; "layers hold" when none does. Usage: check_layers.sh <source root>
cd "$1" || exit 2
engine="util ipc core sampler datasets worker process supervise loader device"
components=$(sed -n 's/^mploader_component(\([a-z0-9_]*\).*/\1/p' components/list.cmake | tr '\n' ' ')
# The components a component names as its dependencies; "-" for a folder that is not one.
component_deps() {
  case " $components " in
    *" $1 "*) sed -n 's/^ *DEPENDS_ON \([a-z0-9_ ]*\).*/\1/p' "components/$1/CMakeLists.txt" ;;
    *) echo "-" ;;
  esac
}
# The folders a file of folder $1 may include.
allowed() {
  deps=$(component_deps "$1")
  if [ "$deps" != "-" ]; then echo "util ipc core $1 $deps"; return; fi
  for l in $engine; do echo "$l"; [ "$l" = "$1" ] && return; done
}
may_include() {  # may_include <folder> <used folder>
  for a in $(allowed "$1"); do [ "$a" = "$2" ] && return 0; done
  return 1
}
why_not() {  # why folder $1 may not include folder $2
  deps=$(component_deps "$1")
  if [ "$deps" != "-" ]; then
    echo "a component includes util/, ipc/, core/ and the components it names" \
         "(${deps:-none}): move the code into one of those, or" \
         "name the component in DEPENDS_ON of components/$1/CMakeLists.txt"
  else
    echo "a layer above $1/ (or no layer): move the code down"
  fi
}
# The layer of each public header (its path under mploader/); empty: not mapped yet.
public_layer() {
  case "$1" in
    errors.h|logging.h) echo util ;;
    batch.h|collate.h|dataset.h|loading_context.h|mixture_end.h|registry.h|sample_writer.h|\
    streaming.h|tensor_dict.h|stage_timer.h) echo core ;;
    block_sampler.h|bucket_sampler.h|distributed_sampler.h|elastic_sampler.h|launch_info.h|mixture.h|\
    rank_agreement.h|sampler.h) echo sampler ;;
    compose.h|npy.h|stream_mixture.h|token_stream.h) echo datasets ;;
    worker_info.h) echo worker ;;
    embedding.h|start_method.h) echo process ;;
    stats.h) echo supervise ;;
    elastic.h|loader.h|options.h|tune.h) echo loader ;;
    device_prefetcher.h|mploader.h) echo device ;;
    */*) c=${1%%/*}; case " $components " in *" $c "*) echo "$c" ;; esac ;;
  esac
}
bad=0
# check <file> <its folder>: every include, quoted (a folder) or <mploader/...> (a public header).
check() {
  for used in $(sed -n 's|^#include "\([a-z0-9_]*\)/.*|\1|p' "$1" | sort -u); do
    if ! may_include "$2" "$used"; then
      echo "$1 includes $used/, which $2/ may not: $(why_not "$2" "$used")"
      bad=1
    fi
  done
  for header in $(sed -n 's|^#include <mploader/\([a-z0-9_/]*\.h\)>.*|\1|p' "$1" | sort -u); do
    layer=$(public_layer "$header")
    if [ -z "$layer" ]; then
      echo "$1 includes <mploader/$header>, which has no layer in $0: give it one"
      bad=1
    elif ! may_include "$2" "$layer"; then
      echo "$1 includes <mploader/$header>, implemented in $layer/, which $2/ may not" \
           "include: $(why_not "$2" "$layer")"
      bad=1
    fi
  done
}
check_public() {  # check_public <folder holding mploader/>
  for file in $(cd "$1/mploader" 2>/dev/null && find . -name '*.h' | sed 's|^\./||' | sort); do
    layer=$(public_layer "$file")
    if [ -z "$layer" ]; then
      echo "$1/mploader/$file has no layer in $0: give it the layer that implements it"
      bad=1
    else
      check "$1/mploader/$file" "$layer"
    fi
  done
}
for folder in $engine; do
  for file in "$folder"/*.h "$folder"/*.cc; do [ -f "$file" ] && check "$file" "$folder"; done
done
for c in $components; do
  for file in "components/$c"/*.h "components/$c"/*.cc; do [ -f "$file" ] && check "$file" "$c"; done
  check_public "components/$c/include"
done
check_public include
# Each layer says what it is for in the first line of one of its files: "// <folder>/: ...".
for folder in $engine $components; do
  dir=$folder; [ -d "$dir" ] || dir="components/$folder"
  if ! head -qn1 "$dir"/*.h "$dir"/*.cc 2>/dev/null | grep -q "^// $folder/: "; then
    echo "$dir/ has no file whose first line says its purpose (// $folder/: ...)"; bad=1
  fi
done
# A new folder must be given its place: in the engine's order, or in components/list.cmake.
for folder in */; do
  folder=${folder%/}
  case " $engine components include bench tests fuzz tools examples docs configs cmake scripts " in
    *" $folder "*) ;;
    *) case "$folder" in build*) ;; *) ls "$folder"/*.cc >/dev/null 2>&1 && {
         echo "$folder/ holds library code but has no place in the layer order of $0"; bad=1; } ;;
       esac ;;
  esac
done
for folder in components/*/; do
  c=$(basename "$folder")
  case " $components " in *" $c "*) ;; *)
    echo "components/$c/ is not in components/list.cmake: add its line there"; bad=1 ;;
  esac
done
[ $bad -eq 0 ] && echo "layers hold"
exit $bad
