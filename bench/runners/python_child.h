// The bench's Python side: the interpreter its peer loaders run under, its scripts, and a
// child process whose stdout is read back.
#pragma once

#include <string>
#include <vector>

namespace bench {

// MPLOADER_BENCH_PYTHON when set, else the project's .venv Python the bench was built with.
std::string python();
// What to do when that Python lacks a package.
std::string python_fix();
// The path of one of the bench's scripts ("pytorch_dataloader.py"): the installed copy beside
// an installed bench, else the source tree's.
std::string script_path(const std::string& file);
// Runs args[0] with stdin from /dev/null and stderr inherited, its stdout into `out` (or
// /dev/null); returns the exit status (127: could not start, 128+N: killed by signal N). The
// child dies with the calling thread (PR_SET_PDEATHSIG).
int run_child(const std::vector<std::string>& args, std::string* out);

}  // namespace bench
