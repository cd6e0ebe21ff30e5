// File outputs of mploader-bench: --csv (one row per loader x configuration, with a header)
// and --plot (samples/s against num_workers, one line per loader and configuration).
// Errors (a folder that does not exist, a full disk) throw std::runtime_error naming the file.
#pragma once

#include "bench/run_config.h"

#include <string>
#include <vector>

namespace bench {

void write_csv(const std::string& path, const std::vector<RunResult>& rows);

// Writes `png` with gnuplot when it is installed, and always <png without .png>.gp and .dat
// next to it, so that `gnuplot FILE.gp` redraws it anywhere. Returns one line for the user:
// what was written, or why the PNG was not.
std::string write_plot(const std::string& png, const std::vector<RunResult>& rows);

// Progress on stderr, only when stderr is a terminal: "[#####.....] 5/12 what".
class Progress {
 public:
  explicit Progress(int64_t total);
  void step(const std::string& what);  // before run number done()+1
  void finish();                       // clears the line
  bool enabled() const { return enabled_; }

 private:
  int64_t total_, done_ = 0;
  bool enabled_;
};

}  // namespace bench
