// Why a worker died: the evidence gathered in the main process, its classification into a
// DeathCause, and the human summary that becomes WorkerCrashed::what().
#pragma once

#include "ipc/crash_record.h"
#include "supervise/memory_evidence.h"
#include "supervise/memory_trend.h"
#include "supervise/quarantine.h"
#include "supervise/symbolize.h"
#include "process/worker_process.h"

#include <mploader/errors.h>

#include <optional>
#include <string>
#include <vector>

namespace mploader::detail {

struct InFlightBatch {
  uint64_t epoch = 0;
  uint64_t sequence = 0;
  std::vector<int64_t> indices;
};

// The loader's options that a crash report states beside the evidence, as the user gave them.
// Made once from the options (loader/component_settings.cc) and read from there by every report.
struct ReportedOptions {
  int64_t num_workers = 0;  // mploader::kAuto (-1) when the autotuner chooses
  int64_t batch_size = 0;
  int64_t prefetch_factor = 0;
  std::string shm_dir;
};

struct DeathEvidence {
  int worker_id = -1;
  int pid = 0;
  int main_pid = 0;
  detail::ExitStatus status;
  std::optional<ipc::CrashSnapshot> crash;  // from the worker's fatal-signal handler
  std::optional<ipc::CrashSnapshot> stack;  // asked of a hung worker before it was killed
  bool hang = false;
  int64_t timeout_ms = 0;
  char process_state = 0;  // of a hung worker, from /proc/<pid>/stat: 'T' stopped, 't' traced
  int64_t loading_index = -1;  // the sample the worker was in, from its region header
  uint32_t phase = 0;
  uint64_t tasks_done = 0;
  std::string init_error;  // what worker_init threw, if that is why it exited
  std::string maps;        // the worker's /proc/self/maps, copied by its signal handler
  std::optional<ProcessMemory> memory;  // the last sample taken while it lived
  int64_t memory_age_ms = -1;
  MemoryHistory memory_history;  // private and shared memory over the epoch
  OomCounter oom_before;
  OomCounter oom_after;
  uint64_t ring_bytes = 0;
  std::vector<InFlightBatch> in_flight;
  ReportedOptions options;
  int64_t workers_running = 0;  // processes at the time of death (kAuto changes it)
  std::optional<QuarantineVerdict> quarantine;  // with quarantine on (index -1: no sample)
  std::vector<QuarantinedSample> quarantined;   // every quarantined sample, after this death
};

struct Diagnosis {
  DeathCause cause = DeathCause::kOtherSignal;
  std::string what_happened;  // one sentence
  std::string evidence;       // the facts that support it, with numbers
  std::string remedy;         // what to change
  std::vector<Frame> frames;  // symbolized, signal-handler frames dropped
};

Diagnosis diagnose(const DeathEvidence& evidence);
// The short paragraph for WorkerCrashed::what().
std::string summary_text(const DeathEvidence& evidence, const Diagnosis& diagnosis,
                         const std::string& report_path);
// SEGV_MAPERR, BUS_ADRERR, ... for a signal's si_code.
std::string si_code_name(int signal, int si_code);

}  // namespace mploader::detail
