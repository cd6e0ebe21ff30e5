#!/bin/sh
# The library's folders are layers (docs/ARCHITECTURE.md): a file may include its own folder
# and the folders listed before it, never one after. Prints each include that breaks the order;
# "layers hold" when none does. Usage: check_layers.sh <source root>
cd "$1" || exit 2
layers="util ipc core sampler datasets worker process supervise loader device vision shards"
rank() { i=0; for l in $layers; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i+1)); done; echo -1; }
bad=0
for folder in $layers; do
  own=$(rank "$folder")
  for file in "$folder"/*.h "$folder"/*.cc; do
    [ -f "$file" ] || continue
    for used in $(sed -n 's|^#include "\([a-z_]*\)/.*|\1|p' "$file" | sort -u); do
      r=$(rank "$used")
      if [ "$r" -lt 0 ] || [ "$r" -gt "$own" ]; then
        echo "$file includes $used/, a layer above $folder/ (or no layer): move the code down"
        bad=1
      fi
    done
  done
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
