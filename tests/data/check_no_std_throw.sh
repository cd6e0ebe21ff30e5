#!/bin/sh
# Every exception mploader throws derives from mploader::Error (include/mploader/errors.h), so
# that one catch (const mploader::Error&) catches them all. Prints each line of a library
# source (the engine's folders, include/ and components/, outside their tests/, bench/, tools/,
# examples/ and fuzz/) that throws a standard exception instead; "no library source throws a
# standard exception" when none does. Usage: check_no_std_throw.sh <source root>
cd "$1" || exit 2
found=$(find . \( -name tests -o -name bench -o -name tools -o -name examples -o -name fuzz \
                  -o -name 'build*' -o -name '.?*' -o -name docs -o -name scripts \) -prune \
             -o -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) \
             -print | sed 's|^\./||' | sort | xargs grep -n 'throw std::' /dev/null)
if [ -n "$found" ]; then
  echo "$found" | while IFS= read -r line; do
    echo "$line: throws a standard exception; throw mploader::OptionError (the caller's" \
         "argument or option is wrong) or mploader::Error (or a subclass), worded by" \
         "mploader::detail::message (util/errors.h)"
  done
  exit 1
fi
echo "no library source throws a standard exception"
