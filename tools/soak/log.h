// The restarts mploader makes and the deaths it diagnoses, counted from its own log messages.
// Apart from the rest of the soak because it includes spdlog, which must compile without
// libtorch's include folders (libtorch 2.x ships fmt headers that clash with the fmt Debian's
// spdlog is built against).
#pragma once

#include <cstdint>

namespace bench::soak {

// Counts mploader's "restarted worker" warnings and the error lines that diagnose a worker's
// death ("worker 1 (pid 123) died [killed]: killed by SIGKILL from outside ..."). install()
// registers the spdlog logger named "mploader" (mploader/logging.h) with a sink that counts
// those lines, and passes every other message on to stderr, deaths of any other cause
// included; the restarts and SIGKILL deaths are not printed (a soak's hundred kills would
// drown its output). Call it before the first Loader. Thread-safe: the Supervisor's thread
// logs deaths while the soak's thread reads.
class LoaderLogTally {
 public:
  // The process's tally, installed on the first call.
  static LoaderLogTally& install();
  // Restarts logged so far by every Loader of this process.
  int64_t restarts() const;
  // Deaths diagnosed as SIGKILL from outside so far (the soak's kills).
  int64_t sigkill_deaths() const;
  // Deaths diagnosed as anything else so far.
  int64_t other_deaths() const;
  // Whether the death of process `pid` has been diagnosed (of any cause).
  bool diagnosed(int pid) const;
  // Drops `pid` from what diagnosed() remembers, so that a long soak's bookkeeping does not
  // grow the RSS it measures.
  void forget(int pid);

 private:
  LoaderLogTally() = default;
};

}  // namespace bench::soak
