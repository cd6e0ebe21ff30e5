#!/bin/sh
# Shows that check_components.sh catches a component with a part missing: on a copy of
# components/ it removes hdf5's fuzz target and parquet's package part, and lists a new
# component "lance" whose folder holds only its CMakeLists.txt; prints what the check said and
# its exit status. Usage: check_components_planted.sh <source root>
copy=$(mktemp -d) || exit 2
trap 'rm -rf "$copy"' EXIT
cp -r "$1/components" "$copy/"
rm "$copy/components/hdf5/fuzz/fuzz.cmake" "$copy/components/parquet/package.cmake.in"
echo 'mploader_component(lance "Lance datasets")' >> "$copy/components/list.cmake"
mkdir "$copy/components/lance"
echo 'mploader_add_component(lance SOURCES lance.cc)' > "$copy/components/lance/CMakeLists.txt"
sh "$1/tests/data/check_components.sh" "$copy"
echo "check_components exit status $?"
