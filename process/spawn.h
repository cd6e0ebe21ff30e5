// start_method spawn: a worker is this program executed afresh. The forked child keeps only
// the descriptors the worker needs (its region, two eventfds, its socket, and the memfd holding
// its WorkerSpec), names the spec's descriptor in one environment variable, and execs
// /proc/self/exe with the program's own argv. The new process reaches mploader::init(), which
// finds the variable and becomes the worker (worker/worker_main.h).
#pragma once

#include "worker/worker_spec.h"

#include <string>
#include <vector>

namespace mploader::detail {

// In a forked child: exec the program as a spawned worker whose spec is in `spec_fd`
// (worker::spec_to_memfd). Returns only if exec failed.
void exec_worker(const worker::WorkerSpec& spec, int spec_fd);
// In a forked child: exec this program with `name`=`value` in its environment, keeping `fds`
// open across this exec (the new process marks them close-on-exec again). Returns only if
// exec failed.
void exec_self(const char* name, const std::string& value, const std::vector<int>& fds);

}  // namespace mploader::detail
