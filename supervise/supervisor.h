// supervise/: watching workers, explaining their deaths, checking the machine.
//
// Supervisor: watches the workers from a thread of its own. It first maps the rings' pages into
// the main process (so that in a worker they count as shared memory). Every 250 ms it samples
// each live worker's resident memory and its memory cgroup's OOM-kill counter, and every 500 ms and at
// each epoch's start its private and shared memory (memory_trend.h: it warns, once per worker per epoch, when the
// private memory keeps growing, before the OOM killer acts); when a worker's pidfd
// becomes readable it gathers the evidence (exit status without reaping, the crash record the
// worker's signal handler left, memory, OOM counters, the batches in flight), classifies the
// death, writes the crash report and logs the summary, all within a second of the death,
// whatever the training loop is doing. The dispatcher asks it for the result when it next
// needs that worker.
//
// Thread-safe: the dispatcher calls in from the training thread while the watch thread runs.
#pragma once

#include "ipc/unique_fd.h"
#include "process/worker_pool.h"
#include "supervise/diagnosis.h"
#include "supervise/in_flight.h"
#include "supervise/memory_trend.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mploader::detail {

// The options a Supervisor reads: where reports go, and the loader's settings its reports state.
struct SupervisorSettings {
  std::string crash_dir;  // LoaderOptions::crash_dir as given; the Supervisor resolves empty
  std::chrono::milliseconds timeout{0};  // stated in the report of a death that is no hang
  ReportedOptions reported;  // echoed in every crash report; num_workers sizes the warnings
  bool persistent_workers = false;  // named in the memory-growth warning's remedies
  // The loader's quarantine (shared with it), which each death on a sample is counted in;
  // null: none.
  std::shared_ptr<Quarantine> quarantine;
};

struct DeathRecord {
  CrashSummary summary;
  std::string message;  // WorkerCrashed::what()
  // With quarantine on: the sample the worker died in (index -1 when it named none).
  std::optional<QuarantineVerdict> quarantine;
};

class Supervisor {
 public:
  Supervisor(WorkerPool& pool, const InFlightTable& in_flight,
             const SupervisorSettings& settings);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // The report of `worker`'s death; gathers it now if the watch thread has not yet.
  std::shared_ptr<const DeathRecord> death_of(size_t worker);
  // For a worker that made no progress within the timeout: asks it for its stack, kills it,
  // and reports a hang.
  std::shared_ptr<const DeathRecord> hang_of(size_t worker, int64_t timeout_ms);
  // The pool restarted `worker` with a new process: watch that one.
  void worker_replaced(size_t worker);
  // The pool started a process in parked `worker` (the autotuner added it): watch it, and map
  // its ring here as the others were.
  void worker_started(size_t worker);
  // The pool is about to stop `worker` in order and park it: stop watching it.
  void worker_parking(size_t worker);
  // Stops watching (before an orderly shutdown makes every worker exit).
  void stop();
  // The dispatcher starts `epoch`: memory is followed, and may be warned about, anew.
  void epoch_started(uint64_t epoch);
  // `worker`'s memory over the epoch so far (LoaderStats).
  WorkerMemory memory_of(size_t worker) const;
  // Memory-growth warnings given so far.
  uint64_t memory_growth_warnings() const;

 private:
  // What is known of a worker while it lives. Copied for gather(), which runs unlocked.
  struct Seen {
    int pid = 0;
    int pidfd = -1;  // Watch::pidfd's, not owned: open until the worker is watched anew
    const std::atomic<int64_t>* foreign_status = nullptr;  // see detail::WorkerProcess
    std::optional<ProcessMemory> memory;
    std::chrono::steady_clock::time_point memory_time;
    OomCounter oom;                    // the "before" of a death: see sample_memory()
    std::optional<OomCounter> pending;  // the latest reading, not yet trusted as "before"
  };
  struct Watch {
    ipc::UniqueFd pidfd;  // our own dup, so the pool may close its copy at any time
    Seen seen;
    bool gathering = false;
    std::shared_ptr<const DeathRecord> record;
    // Counts the processes watched in this slot: a report that was asked for one process
    // must not wait on, or be given, the record of the next (worker_replaced()).
    uint64_t generation = 0;
  };

  void run();
  // Maps every page of the rings into this process (ShmRegion::map_pages), then lets the
  // memory trends begin. Off the training thread: the first touch of each page zeroes it, and
  // the first batch need not wait for that.
  void map_rings();
  void sample_memory();
  void sample_resident_memory();
  // `generation`: the watch thread's, of the process it polled; nullopt for the dispatcher's
  // own questions, which always mean the current process.
  std::shared_ptr<const DeathRecord> report(size_t worker, bool hang, int64_t timeout_ms,
                                            std::optional<uint64_t> generation = std::nullopt);
  std::shared_ptr<const DeathRecord> gather(size_t worker, bool hang, int64_t timeout_ms,
                                            const Seen& seen, MemoryHistory history);
  // Feeds each live worker's private and shared memory to its trend; returns the warnings.
  std::vector<std::string> follow_memory_growth();
  void watch(size_t worker);
  // With quarantine on: counts the death against the sample it names (a fatal signal in
  // Dataset::get or write) and lists the quarantined samples for the report.
  void judge_sample(DeathEvidence& e, const Diagnosis& d) const;
  static void end_hung_worker(ipc::RegionHeader& header, detail::ProcessRef process,
                              DeathEvidence& evidence);

  WorkerPool& pool_;
  const InFlightTable& in_flight_;  // the dispatcher's
  SupervisorSettings settings_;
  std::string crash_dir_;
  mutable std::mutex mutex_;
  std::condition_variable gathered_;
  std::vector<Watch> watches_;
  std::vector<MemoryTrend> trends_;  // per slot, across the processes in it
  uint64_t growth_warnings_ = 0;
  uint64_t samples_taken_ = 0;
  // Until the rings are mapped here, ring pages a worker wrote would count as its private
  // memory: the trends take no sample before, and an epoch that started takes its first after.
  bool rings_mapped_ = false;
  bool epoch_sample_pending_ = false;
  std::vector<size_t> rings_to_map_;  // workers whose ring pages are not yet mapped here
  std::vector<size_t> mapped_;        // and those whose are
  ipc::EventFd wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mploader::detail
