#!/bin/sh
# Each component listed in components/list.cmake has the parts docs/contributing.md's "Adding a
# format" names, in its own folder: its CMakeLists.txt calls mploader_add_component(<name>, its
# public headers are in include/mploader/<name>/, and its package part, its Debian packages'
# list, tests, fuzz target (with a seed corpus) and README (linking its user page in docs/) are
# there. A component's bench workload is optional. Prints each part missing; "components
# complete" when none is.
# Usage: check_components.sh <source root>
cd "$1" || exit 2
bad=0
missing() { echo "components/$1/ has no $2: $3 (docs/contributing.md, Adding a format)"; bad=1; }
names=$(sed -n 's/^mploader_component(\([a-z0-9_]*\).*/\1/p' components/list.cmake)
[ -n "$names" ] || { echo "components/list.cmake lists no component"; exit 2; }
for c in $names; do
  d=components/$c
  grep -q "^mploader_add_component($c\b" "$d/CMakeLists.txt" 2>/dev/null ||
    missing "$c" "CMakeLists.txt calling mploader_add_component($c ...)" "it makes the target"
  ls "$d/include/mploader/$c/"*.h >/dev/null 2>&1 ||
    missing "$c" "public header in include/mploader/$c/" "users include <mploader/$c/...>"
  [ -f "$d/package.cmake.in" ] ||
    missing "$c" "package.cmake.in" "the installed package finds its libraries with it"
  [ -f "$d/debian-packages" ] ||
    missing "$c" "debian-packages" "scripts/install-deps installs what it builds on from it"
  grep -q "mploader_component_tests($c\b" "$d/tests/tests.cmake" 2>/dev/null ||
    missing "$c" "tests/tests.cmake calling mploader_component_tests($c ...)" "its tests' binary"
  grep -q "mploader_fuzz_target(" "$d/fuzz/fuzz.cmake" 2>/dev/null ||
    missing "$c" "fuzz/fuzz.cmake calling mploader_fuzz_target" "what it parses is fuzzed"
  for target in $(sed -n 's/.*mploader_fuzz_target(\([a-z0-9_]*\).*/\1/p' "$d/fuzz/fuzz.cmake" 2>/dev/null); do
    [ -f "$d/fuzz/fuzz_$target.cc" ] || missing "$c" "fuzz/fuzz_$target.cc" "the fuzz target"
    ls "$d/fuzz/corpus/$target/"* >/dev/null 2>&1 ||
      missing "$c" "seed corpus fuzz/corpus/$target/" "the fuzzer starts from it"
  done
  grep -q "](../../docs/[a-z0-9_-]*\.md" "$d/README.md" 2>/dev/null ||
    missing "$c" "README.md linking its page in docs/" "users and contributors start there"
done
[ $bad -eq 0 ] && echo "components complete: $(echo $names | wc -w) components"
exit $bad
