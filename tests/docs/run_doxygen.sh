#!/bin/sh
# Runs doxygen over docs/Doxyfile and the public headers of every component listed in
# components/list.cmake, with every warning an error; prints its output and "exit status N".
# Usage (from the repository root): run_doxygen.sh <doxygen> <output folder>
{
  cat docs/Doxyfile
  echo "WARN_AS_ERROR = YES"
  echo "OUTPUT_DIRECTORY = $2"
  for c in $(sed -n 's/^mploader_component(\([a-z0-9_]*\).*/\1/p' components/list.cmake); do
    echo "INPUT += components/$c/include/mploader/$c"
  done
} | "$1" - 2>&1
echo "exit status $?"
