// Shared by the crash tests: run a loader until it throws, time it, and read the report.
#pragma once

#include "test_datasets.h"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

namespace crash_testing {

struct Outcome {
  bool threw = false;
  mploader::CrashSummary summary;
  std::string message;
  double seconds = 0;  // from the call that threw to the throw
  std::vector<int> pids;
  nlohmann::json report;
};

// A new folder for crash reports, removed when the test program exits (by the process that
// made it: a forked child that calls exit() must not remove its parent's folders).
inline std::string fresh_dir() {
  struct Made {
    std::vector<std::string> dirs;
    pid_t owner = getpid();
    ~Made() {
      if (getpid() != owner) return;
      std::error_code ignored;
      for (const std::string& d : dirs) std::filesystem::remove_all(d, ignored);
    }
  };
  static Made made;
  char dir[] = "/tmp/mploader-crash-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) return "/tmp";
  made.dirs.push_back(dir);
  return dir;
}

inline mploader::LoaderOptions crash_options(int64_t workers, const std::string& crash_dir) {
  mploader::LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = 10;
  o.crash_dir = crash_dir;
  return o;
}

// Iterates until WorkerCrashed (or the end); the loader is destroyed before returning.
// `after_first_batch` runs once the first batch is in hand (to change the world under the
// workers mid-epoch).
inline Outcome run_until_crash(std::shared_ptr<mploader::Dataset> data,
                               const mploader::LoaderOptions& options,
                               const std::function<void()>& after_first_batch = {}) {
  Outcome out;
  mploader::Loader loader(std::move(data), options);
  out.pids = loader.worker_pids();
  for (bool first = true;; first = false) {
    const auto start = std::chrono::steady_clock::now();
    try {
      if (!loader.next()) break;
      if (first && after_first_batch) after_first_batch();
    } catch (const mploader::WorkerCrashed& e) {
      out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      out.threw = true;
      out.summary = e.summary();
      out.message = e.what();
      break;
    }
  }
  if (!out.summary.report_path.empty()) {
    std::ifstream in(out.summary.report_path);
    out.report = nlohmann::json::parse(in, nullptr, false);
  }
  return out;
}

inline bool process_gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

inline bool has_frame(const nlohmann::json& report, const std::string& function_part) {
  if (!report.is_object() || !report.contains("frames")) return false;
  for (const auto& f : report["frames"]) {
    if (f.value("function", "").find(function_part) != std::string::npos) return true;
  }
  return false;
}

inline bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace crash_testing
