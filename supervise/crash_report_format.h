// The crash report's format, defined once: its version, every JSON key and the cause names.
// The writer (supervise/crash_report.cc) and the reader (tools/mploader_report.cc) both spell
// the report with these, so they cannot drift apart. Renaming anything here changes the format
// of reports already on disk: raise kVersion with it.
//
// Header-only, with no JSON library and no libtorch: mploader-report includes it without
// linking the library.
#pragma once

#include <mploader/errors.h>

#include <cstring>

namespace mploader::crash_report {

inline constexpr int kVersion = 1;

// The top-level object.
namespace top {
inline constexpr const char* kVersionKey = "mploader_crash_report";  // its value is kVersion
inline constexpr const char* kTime = "time";
inline constexpr const char* kUnixTime = "unix_time";
inline constexpr const char* kMainPid = "main_pid";
inline constexpr const char* kWorker = "worker";  // object: worker::
inline constexpr const char* kCause = "cause";    // a name of a DeathCause (cause_name)
inline constexpr const char* kWhatHappened = "what_happened";
inline constexpr const char* kEvidence = "evidence";
inline constexpr const char* kRemedy = "remedy";
inline constexpr const char* kExit = "exit";                 // object: exit_status::
inline constexpr const char* kCrashRecord = "crash_record";  // object: record::, or null
inline constexpr const char* kFrames = "frames";             // array of frame::
inline constexpr const char* kDetails = "details";           // object: details::
}  // namespace top

namespace worker {
inline constexpr const char* kId = "id";
inline constexpr const char* kPid = "pid";
}  // namespace worker

namespace exit_status {
inline constexpr const char* kSignal = "signal";
inline constexpr const char* kSignalName = "signal_name";
inline constexpr const char* kExitCode = "exit_code";
inline constexpr const char* kCoreDumped = "core_dumped";
}  // namespace exit_status

// What the worker's signal handler recorded (ipc/crash_record.h).
namespace record {
inline constexpr const char* kSignal = "signal";
inline constexpr const char* kSiCode = "si_code";
inline constexpr const char* kSiCodeName = "si_code_name";
inline constexpr const char* kFaultAddress = "fault_address";
inline constexpr const char* kThread = "thread";
inline constexpr const char* kPhase = "phase";
inline constexpr const char* kSampleIndex = "sample_index";
inline constexpr const char* kSequence = "sequence";
inline constexpr const char* kMapping = "mapping";
inline constexpr const char* kMappingFsFreeBytes = "mapping_fs_free_bytes";
inline constexpr const char* kMappingFileSizeBytes = "mapping_file_size_bytes";  // -1 unknown
}  // namespace record

namespace frame {
inline constexpr const char* kAddress = "address";
inline constexpr const char* kFunction = "function";
inline constexpr const char* kFile = "file";
inline constexpr const char* kLine = "line";
inline constexpr const char* kModule = "module";
}  // namespace frame

namespace details {
inline constexpr const char* kInFlight = "in_flight";  // array of batch::
inline constexpr const char* kMemory = "memory";       // object: memory::, or null
inline constexpr const char* kOom = "oom";             // object: oom::
inline constexpr const char* kLoadingIndex = "loading_index";
inline constexpr const char* kProcessState = "process_state";
inline constexpr const char* kPhase = "phase";
inline constexpr const char* kTasksDone = "tasks_done";
inline constexpr const char* kShmDir = "shm_dir";
inline constexpr const char* kOptions = "options";  // object: options::
// Present when LoaderOptions::quarantine_after is on: object: quarantine::.
inline constexpr const char* kQuarantine = "quarantine";
}  // namespace details

// What this death means for the sample it was in (LoaderOptions::quarantine_after).
namespace quarantine {
inline constexpr const char* kSampleIndex = "sample_index";  // -1: the death named none
inline constexpr const char* kDeaths = "deaths_on_sample";  // this one included
inline constexpr const char* kQuarantined = "quarantined";  // true: this death quarantined it
inline constexpr const char* kNote = "note";                // why, or why not yet
inline constexpr const char* kSamples = "samples";  // array of quarantined::, after this death
}  // namespace quarantine

// One sample of quarantine::kSamples.
namespace quarantined {
inline constexpr const char* kIndex = "index";
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kDeaths = "deaths";
inline constexpr const char* kCause = "cause";
}  // namespace quarantined

// A batch the worker held when it died.
namespace batch {
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kSequence = "sequence";
inline constexpr const char* kIndices = "indices";
}  // namespace batch

namespace memory {
inline constexpr const char* kLastRssBytes = "last_rss_bytes";
inline constexpr const char* kPeakRssBytes = "peak_rss_bytes";
inline constexpr const char* kSampledMsBeforeDeath = "sampled_ms_before_death";
inline constexpr const char* kRingBytes = "ring_bytes";
// The worker's private and shared memory over the epoch (WorkerMemory), and its samples.
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kPrivateStartBytes = "private_start_bytes";
inline constexpr const char* kPrivateBytes = "private_bytes";
inline constexpr const char* kPrivatePeakBytes = "private_peak_bytes";
inline constexpr const char* kSharedStartBytes = "shared_start_bytes";
inline constexpr const char* kSharedBytes = "shared_bytes";
inline constexpr const char* kGrowthWarned = "growth_warned";
inline constexpr const char* kSeries = "series";  // array of sample::, oldest first
}  // namespace memory

// One sample of memory::kSeries.
namespace sample {
inline constexpr const char* kMs = "ms";  // since the epoch (or the process) began
inline constexpr const char* kBatches = "batches";  // the process had finished
inline constexpr const char* kPrivateBytes = "private_bytes";
inline constexpr const char* kSharedBytes = "shared_bytes";
}  // namespace sample

namespace oom {
inline constexpr const char* kSource = "source";
inline constexpr const char* kCgroup = "cgroup";
inline constexpr const char* kLimitBytes = "limit_bytes";
inline constexpr const char* kOomKillsBefore = "oom_kills_before";
inline constexpr const char* kOomKillsAfter = "oom_kills_after";
}  // namespace oom

namespace options {
inline constexpr const char* kNumWorkers = "num_workers";
inline constexpr const char* kBatchSize = "batch_size";
inline constexpr const char* kPrefetchFactor = "prefetch_factor";
inline constexpr const char* kTimeoutMs = "timeout_ms";
// Worker processes running when it died: num_workers, or with kAuto the autotuner's count.
inline constexpr const char* kWorkersRunning = "workers_running";
}  // namespace options

// The name of `cause` in a report: mploader::to_string(DeathCause) (util/errors.cc).
inline const char* cause_name(DeathCause cause) { return to_string(cause); }

// Whether `name` is a cause a report may name: the name of some DeathCause.
inline bool is_cause_name(const char* name) {
  for (int c = 0; c < kDeathCauseCount; ++c) {
    if (std::strcmp(to_string(static_cast<DeathCause>(c)), name) == 0) return true;
  }
  return false;
}

}  // namespace mploader::crash_report
