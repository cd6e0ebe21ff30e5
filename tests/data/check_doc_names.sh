#!/bin/sh
# Docs that cannot drift from the code: docs/options.md names every field of LoaderOptions
# (include/mploader/options.h), and docs/crash-reports.md every cause a crash report gives
# (to_string(DeathCause), util/errors.cc). Prints each one missing; "docs name them all" when
# none is. Usage: check_doc_names.sh <source root>
cd "$1" || exit 2
bad=0
# A field: "  <type> <name>;", "  <type> <name> = <value>;" or "  <type> <name>{<value>};".
fields=$(awk '/^struct LoaderOptions/,/^};/' include/mploader/options.h | grep -v '^ *//' |
         sed -nE 's/^  [^=;{]* ([a-z_][a-z0-9_]*)( = [^;]*|\{[^}]*\})?;.*$/\1/p')
[ -n "$fields" ] || { echo "no LoaderOptions field found in include/mploader/options.h"; exit 2; }
for f in $fields; do
  grep -q "\`$f\`" docs/options.md || {
    echo "docs/options.md does not name LoaderOptions::$f: give it a row"; bad=1; }
done
# The causes' names, and the one for any other signal (to_string's last return).
causes=$(awk "/^const char\\* to_string\\(DeathCause/,/^}/" util/errors.cc | sed -nE 's/.*return "([a-z_]+)";.*/\1/p')
[ -n "$causes" ] || { echo "no DeathCause name found in util/errors.cc"; exit 2; }
for c in $causes; do
  grep -q "\`$c\`" docs/crash-reports.md || {
    echo "docs/crash-reports.md does not name the cause \"$c\": give it a row"; bad=1; }
done
[ $bad -eq 0 ] && echo "docs name them all"
exit $bad
