// Whether other work took the CPUs while a test ran. A test whose check needs the machine to
// itself (workers that compute must look as if they compute) checks it, and when it does not
// hold on a busy machine, says "skipped: <why>" instead of failing (ctest reports a skip).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace machine_load {

// The kernel's CPU pressure (/proc/pressure/cpu, "some"): the time in which some runnable task
// waited for a CPU. Measured from construction, so it covers the test's own run; where the
// kernel has no pressure files, the load average against the CPUs stands in.
class CpuPressure {
 public:
  CpuPressure() : start_(std::chrono::steady_clock::now()), waited_us_(some_total_us()) {}

  // The share of the wall time since construction in which some task waited for a CPU, or a
  // negative number where the kernel does not say.
  double share() const {
    const long long now_us = some_total_us();
    if (waited_us_ < 0 || now_us < 0) return -1;
    const double wall_us = std::chrono::duration<double, std::micro>(
                               std::chrono::steady_clock::now() - start_).count();
    return wall_us > 0 ? static_cast<double>(now_us - waited_us_) / wall_us : 0;
  }

  // Why the machine counts as busy ("" when it does not): tasks waited for a CPU over
  // `threshold` of the time, or (no pressure files) the 1-minute load passed the CPUs.
  std::string busy_reason(double threshold = 0.2) const {
    char text[160];
    const double waited = share();
    if (waited >= 0) {
      if (waited < threshold) return "";
      std::snprintf(text, sizeof text,
                    "the machine is busy: tasks waited for a CPU %.0f %% of the time "
                    "(/proc/pressure/cpu)", waited * 100);
      return text;
    }
    double load = 0;
    std::ifstream("/proc/loadavg") >> load;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (load <= static_cast<double>(cpus)) return "";
    std::snprintf(text, sizeof text, "the machine is busy: load average %.1f on %ld CPUs",
                  load, cpus);
    return text;
  }

 private:
  // "some avg10=.. avg60=.. avg300=.. total=<us>"; -1 without the file.
  static long long some_total_us() {
    std::ifstream in("/proc/pressure/cpu");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("some ", 0) != 0) continue;
      const size_t at = line.find("total=");
      if (at != std::string::npos) return std::stoll(line.substr(at + 6));
    }
    return -1;
  }

  std::chrono::steady_clock::time_point start_;
  long long waited_us_;
};

}  // namespace machine_load
