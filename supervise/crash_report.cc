#include "supervise/crash_report.h"

#include "ipc/fd_limit.h"
#include "ipc/unique_fd.h"
#include "supervise/crash_report_format.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace mploader {

namespace detail {
namespace {

using nlohmann::json;
namespace key = crash_report;  // the keys, by the object they belong to

json frames_json(const std::vector<Frame>& frames) {
  json out = json::array();
  for (const Frame& f : frames) {
    out.push_back({{key::frame::kAddress, f.address}, {key::frame::kFunction, f.function},
                   {key::frame::kFile, f.file}, {key::frame::kLine, f.line},
                   {key::frame::kModule, f.module}});
  }
  return out;
}

json crash_json(const std::optional<ipc::CrashSnapshot>& c, int signal) {
  if (!c) return nullptr;
  namespace k = key::record;
  return {{k::kSignal, c->signal},
          {k::kSiCode, c->si_code},
          {k::kSiCodeName, si_code_name(signal, c->si_code)},
          {k::kFaultAddress, c->fault_address},
          {k::kThread, c->tid},
          {k::kPhase, ipc::phase_name(c->phase)},
          {k::kSampleIndex, c->sample_index},
          {k::kSequence, c->sequence},
          {k::kMapping, c->mapping},
          {k::kMappingFsFreeBytes, c->mapping_fs_free},
          {k::kMappingFileSizeBytes, c->mapping_file_size}};
}

// The memory section: resident memory when last sampled, and private and shared memory over
// the epoch. Null when the worker was never sampled.
json memory_json(const DeathEvidence& e) {
  if (!e.memory && e.memory_history.summary.samples == 0) return nullptr;
  namespace k = key::memory;
  const WorkerMemory& m = e.memory_history.summary;
  json series = json::array();
  for (const MemoryPoint& p : e.memory_history.series) {
    series.push_back({{key::sample::kMs, p.ms}, {key::sample::kBatches, p.tasks},
                      {key::sample::kPrivateBytes, p.private_bytes},
                      {key::sample::kSharedBytes, p.shared_bytes}});
  }
  return {{k::kLastRssBytes, e.memory ? e.memory->rss_bytes : -1},
          {k::kPeakRssBytes, e.memory ? e.memory->hwm_bytes : -1},
          {k::kSampledMsBeforeDeath, e.memory_age_ms},
          {k::kRingBytes, e.ring_bytes},
          {k::kEpoch, m.epoch},
          {k::kPrivateStartBytes, m.private_start_bytes},
          {k::kPrivateBytes, m.private_bytes},
          {k::kPrivatePeakBytes, m.private_peak_bytes},
          {k::kSharedStartBytes, m.shared_start_bytes},
          {k::kSharedBytes, m.shared_bytes},
          {k::kGrowthWarned, m.growth_warned},
          {k::kSeries, series}};
}

// The quarantine section (quarantine on): this death's sample and every quarantined one.
json quarantine_json(const DeathEvidence& e) {
  if (!e.quarantine) return nullptr;
  namespace k = key::quarantine;
  namespace q = key::quarantined;
  json samples = json::array();
  for (const QuarantinedSample& s : e.quarantined) {
    samples.push_back({{q::kIndex, s.index}, {q::kEpoch, s.epoch}, {q::kDeaths, s.deaths},
                       {q::kCause, s.cause}});
  }
  return {{k::kSampleIndex, e.quarantine->index},
          {k::kDeaths, e.quarantine->deaths},
          {k::kQuarantined, e.quarantine->quarantined},
          {k::kNote, e.quarantine->note},
          {k::kSamples, samples}};
}

json evidence_json(const DeathEvidence& e) {
  json in_flight = json::array();
  for (const InFlightBatch& b : e.in_flight) {
    in_flight.push_back({{key::batch::kEpoch, b.epoch}, {key::batch::kSequence, b.sequence},
                         {key::batch::kIndices, b.indices}});
  }
  const json memory = memory_json(e);
  const json oom = {{key::oom::kSource, e.oom_after.source},
                    {key::oom::kCgroup, e.oom_after.path},
                    {key::oom::kLimitBytes, e.oom_after.limit_bytes},
                    {key::oom::kOomKillsBefore, e.oom_before.oom_kills},
                    {key::oom::kOomKillsAfter, e.oom_after.oom_kills}};
  const json options = {{key::options::kNumWorkers, e.options.num_workers},
                        {key::options::kBatchSize, e.options.batch_size},
                        {key::options::kPrefetchFactor, e.options.prefetch_factor},
                        {key::options::kTimeoutMs, e.timeout_ms},
                        {key::options::kWorkersRunning, e.workers_running}};
  namespace k = key::details;
  json details = {{k::kInFlight, in_flight},
                  {k::kMemory, memory},
                  {k::kOom, oom},
                  {k::kLoadingIndex, e.loading_index},
                  {k::kProcessState, e.process_state ? std::string(1, e.process_state) : ""},
                  {k::kPhase, ipc::phase_name(e.phase)},
                  {k::kTasksDone, e.tasks_done},
                  {k::kShmDir, e.options.shm_dir},
                  {k::kOptions, options}};
  if (e.quarantine) details[k::kQuarantine] = quarantine_json(e);
  return details;
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

// The whole report, as crash_report_format.h spells it.
json report_json(const DeathEvidence& e, const Diagnosis& d, std::time_t now) {
  const json exit_json = {
      {key::exit_status::kSignal, e.status.signal},
      {key::exit_status::kSignalName, e.status.signal ? strsignal(e.status.signal) : ""},
      {key::exit_status::kExitCode, e.status.exit_code},
      {key::exit_status::kCoreDumped, e.status.core_dumped}};
  namespace k = key::top;
  return {{k::kVersionKey, crash_report::kVersion},
          {k::kTime, timestamp(now, "%Y-%m-%dT%H:%M:%SZ")},
          {k::kUnixTime, static_cast<int64_t>(now)},
          {k::kMainPid, e.main_pid},
          {k::kWorker, {{key::worker::kId, e.worker_id}, {key::worker::kPid, e.pid}}},
          {k::kCause, crash_report::cause_name(d.cause)},
          {k::kWhatHappened, d.what_happened},
          {k::kEvidence, d.evidence},
          {k::kRemedy, d.remedy},
          {k::kExit, exit_json},
          {k::kCrashRecord, crash_json(e.crash, e.status.signal)},
          {k::kFrames, frames_json(d.frames)},
          {k::kDetails, evidence_json(e)}};
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
  const json report = report_json(e, d, now);
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

}  // namespace detail
}  // namespace mploader
