#include "supervise/crash_report.h"

#include "ipc/fd_limit.h"
#include "ipc/unique_fd.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace mploader::detail {
namespace {

using nlohmann::json;

json frames_json(const std::vector<Frame>& frames) {
  json out = json::array();
  for (const Frame& f : frames) {
    out.push_back({{"address", f.address}, {"function", f.function}, {"file", f.file},
                   {"line", f.line}, {"module", f.module}});
  }
  return out;
}

json crash_json(const std::optional<ipc::CrashSnapshot>& c, int signal) {
  if (!c) return nullptr;
  return {{"signal", c->signal},        {"si_code", c->si_code},
          {"si_code_name", si_code_name(signal, c->si_code)},
          {"fault_address", c->fault_address}, {"thread", c->tid},
          {"phase", ipc::phase_name(c->phase)}, {"sample_index", c->sample_index},
          {"sequence", c->sequence},    {"mapping", c->mapping},
          {"mapping_fs_free_bytes", c->mapping_fs_free}};
}

json evidence_json(const DeathEvidence& e) {
  json in_flight = json::array();
  for (const InFlightBatch& b : e.in_flight) {
    in_flight.push_back({{"epoch", b.epoch}, {"sequence", b.sequence}, {"indices", b.indices}});
  }
  json memory = nullptr;
  if (e.memory) {
    memory = {{"last_rss_bytes", e.memory->rss_bytes}, {"peak_rss_bytes", e.memory->hwm_bytes},
              {"sampled_ms_before_death", e.memory_age_ms}, {"ring_bytes", e.ring_bytes}};
  }
  return {{"in_flight", in_flight},
          {"memory", memory},
          {"oom", {{"source", e.oom_after.source}, {"cgroup", e.oom_after.path},
                   {"limit_bytes", e.oom_after.limit_bytes},
                   {"oom_kills_before", e.oom_before.oom_kills},
                   {"oom_kills_after", e.oom_after.oom_kills}}},
          {"loading_index", e.loading_index},
          {"process_state", e.process_state ? std::string(1, e.process_state) : ""},
          {"phase", ipc::phase_name(e.phase)},
          {"tasks_done", e.tasks_done},
          {"shm_dir", e.shm_dir},
          {"options", {{"num_workers", e.num_workers}, {"batch_size", e.batch_size},
                       {"prefetch_factor", e.prefetch_factor}, {"timeout_ms", e.timeout_ms}}}};
}

std::string timestamp(std::time_t now, const char* format) {
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// Creates `dir` and its parents.
bool make_directories(const std::string& dir, std::string& error) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "mkdir " + part + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

std::string crash_directory(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("MPLOADER_CRASH_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return "mploader-crashes";
}

std::string write_crash_report(const DeathEvidence& e, const Diagnosis& d,
                               const std::string& directory, std::string& error) {
  const std::time_t now = std::time(nullptr);
  json report = {{"mploader_crash_report", kCrashReportVersion},
                 {"time", timestamp(now, "%Y-%m-%dT%H:%M:%SZ")},
                 {"unix_time", static_cast<int64_t>(now)},
                 {"main_pid", e.main_pid},
                 {"worker", {{"id", e.worker_id}, {"pid", e.pid}}},
                 {"cause", to_string(d.cause)},
                 {"what_happened", d.what_happened},
                 {"evidence", d.evidence},
                 {"remedy", d.remedy},
                 {"exit", {{"signal", e.status.signal},
                           {"signal_name", e.status.signal ? strsignal(e.status.signal) : ""},
                           {"exit_code", e.status.exit_code},
                           {"core_dumped", e.status.core_dumped}}},
                 {"crash_record", crash_json(e.crash, e.status.signal)},
                 {"frames", frames_json(d.frames)},
                 {"details", evidence_json(e)}};
  if (!make_directories(directory, error)) return {};
  const std::string stem = directory + "/mploader-crash-" + timestamp(now, "%Y%m%dT%H%M%S") +
                           "-worker" + std::to_string(e.worker_id) + "-pid" +
                           std::to_string(e.pid);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path = stem + (attempt ? "-" + std::to_string(attempt) : "") + ".json";
    const ipc::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd && errno == EEXIST) continue;
    if (!fd) {
      const int err = errno;
      const std::string advice = ipc::fd_limit_advice(err);
      error = "open " + path + ": " + std::strerror(err) + (advice.empty() ? "" : "; " + advice);
      return {};
    }
    const std::string text = report.dump(2) + "\n";
    const bool written =
        write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (!written) error = "write " + path + ": short write (disk full?)";
    return written ? path : std::string();
  }
  error = "100 reports with the same name already exist under " + stem;
  return {};
}

}  // namespace mploader::detail
