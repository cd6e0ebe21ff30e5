#include "supervise/supervisor.h"

#include "supervise/crash_report.h"
#include "util/log.h"
#include "worker/crash_handler.h"
#include "process/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace mploader::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSampleEveryMs = 250;
constexpr uint64_t kSplitEverySamples = 2;  // smaps_rollup walks page tables: every 500 ms
constexpr int kStackWaitMs = 500;   // how long a hung worker has to answer the stack request
constexpr int kKillWaitMs = 2000;   // how long a SIGKILLed worker may take to be gone

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return fd >= 0 && poll(&p, 1, 0) > 0;
}

// Asks a live worker for its stack (worker/crash_handler.h) and waits briefly for the answer.
std::optional<ipc::CrashSnapshot> request_stack(ipc::RegionHeader& h, int pid) {
  h.stack_dump.state.store(ipc::CrashRecord::kEmpty, std::memory_order_release);
  if (kill(pid, worker::kStackDumpSignal) != 0) return std::nullopt;
  for (int waited = 0; waited < kStackWaitMs; waited += 5) {
    if (auto s = ipc::snapshot(h.stack_dump)) return s;
    usleep(5000);
  }
  return std::nullopt;
}

// The state letter of /proc/<pid>/stat: R, S, D, T (stopped), t (traced), Z, ...; 0 if
// unknown. The command name before it may hold spaces and ')', so it follows the last ')'.
char process_state(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const ipc::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return 0;
  char buf[512];
  const ssize_t n = read(fd.get(), buf, sizeof buf);
  if (n <= 0) return 0;
  const std::string text(buf, static_cast<size_t>(n));
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2] : 0;
}

}  // namespace

Supervisor::Supervisor(WorkerPool& pool, const InFlightTable& in_flight,
                       const SupervisorSettings& settings)
    : pool_(pool),
      in_flight_(in_flight),
      settings_(settings),
      crash_dir_(crash_directory(settings.crash_dir)),
      watches_(pool.size()),
      trends_(pool.size()) {
  auto wake = ipc::EventFd::create();
  if (!wake.ok()) throw Error("mploader: supervisor: " + wake.error().describe());
  wake_ = wake.take();
  // A throw here leaves the watches' pidfds to the members' destructors.
  for (size_t w = 0; w < pool.size(); ++w) {
    watch(w);
    if (!pool.channel(w).parked) rings_to_map_.push_back(w);
  }
  detail::note_own_thread(+1);
  thread_ = std::thread([this] { run(); });
}

Supervisor::~Supervisor() { stop(); }

void Supervisor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify();
  if (thread_.joinable()) {
    thread_.join();
    detail::note_own_thread(-1);
  }
}

// Starts watching the current process of `worker`. The counters read here are the "before" of
// any later death.
void Supervisor::watch(size_t worker) {
  Watch& w = watches_[worker];
  const uint64_t generation = w.generation + 1;
  w = Watch{};
  w.generation = generation;
  const detail::WorkerProcess& p = pool_.channel(worker).process;
  if (p.pid <= 0) return;  // a parked slot: nothing to watch until a process starts in it
  if (p.pidfd) {
    w.pidfd.reset(fcntl(p.pidfd.get(), F_DUPFD_CLOEXEC, 0));
    if (!w.pidfd) {  // unwatched, a death would go unreported
      throw Error("mploader: supervisor: watching worker " + std::to_string(worker) + ": " +
                  ipc::last_error("fcntl(F_DUPFD_CLOEXEC)", "its pidfd").describe());
    }
  }
  Seen& s = w.seen;
  s.pid = p.pid;
  s.pidfd = w.pidfd.get();
  s.foreign_status = p.foreign_status;
  s.oom = read_oom_counter(p.pid);
  s.memory = read_process_memory(p.pid);
  s.memory_time = Clock::now();
  trends_[worker].new_process(s.memory_time,
                              pool_.channel(worker).view.header().tasks_done.load());
}

// Every epoch starts with a sample: epochs shorter than the sampling interval still leave one
// per epoch, so that memory kept from epoch to epoch shows however fast they run.
void Supervisor::epoch_started(uint64_t epoch) {
  std::vector<std::string> warnings;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = Clock::now();
    for (MemoryTrend& t : trends_) t.new_epoch(epoch, now);
    epoch_sample_pending_ = !rings_mapped_;
    warnings = follow_memory_growth();
  }
  for (const std::string& warning : warnings) log().warn(warning);
}

WorkerMemory Supervisor::memory_of(size_t worker) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trends_[worker].summary();
}

uint64_t Supervisor::memory_growth_warnings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return growth_warnings_;
}

void Supervisor::worker_replaced(size_t worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  watch(worker);
  wake_.notify();
}

void Supervisor::worker_started(size_t worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  watch(worker);
  if (std::find(mapped_.begin(), mapped_.end(), worker) == mapped_.end()) {
    rings_to_map_.push_back(worker);
  }
  wake_.notify();
}

// The watch of the process goes first: its orderly exit must not be read as a death. A
// poll already waiting on its pidfd asks about an older generation and gets no report.
void Supervisor::worker_parking(size_t worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  Watch& w = watches_[worker];
  if (w.gathering) return;  // it died first: that death is reported, then it is parked
  const uint64_t generation = w.generation + 1;
  w = Watch{};
  w.generation = generation;
  wake_.notify();
}

// Each ring from its end: a worker fills its slot 0, at the front, first, and its first batch
// should not wait on this thread for those pages.
void Supervisor::map_rings() {
  constexpr size_t kChunkBytes = size_t{8} << 20;  // stop() waits for one chunk at most
  for (;;) {
    size_t w = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (rings_to_map_.empty()) break;
      w = rings_to_map_.front();
      rings_to_map_.erase(rings_to_map_.begin());
      mapped_.push_back(w);
    }
    const ipc::ShmRegion& ring = *pool_.channel(w).region;
    for (size_t end = ring.size(); end > 0;) {
      const size_t begin = end > kChunkBytes ? end - kChunkBytes : 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
      }
      // Cannot fail for want of memory: the pages were reserved when the ring was made.
      ipc::Status mapped = ring.map_pages(begin, end - begin);
      end = begin;
      if (!mapped.ok()) {
        std::shared_lock<std::shared_mutex> no_fork(detail::fork_gate());
        log().warn("mploader: mapping worker {}'s ring into the main process: {}. The memory "
                   "figures of that worker count ring pages as its own.",
                   w, mapped.error().describe());
        break;
      }
    }
  }
  std::vector<std::string> warnings;
  std::shared_lock<std::shared_mutex> no_fork(detail::fork_gate());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rings_mapped_) return;
    rings_mapped_ = true;
    if (epoch_sample_pending_) warnings = follow_memory_growth();
    epoch_sample_pending_ = false;
  }
  for (const std::string& warning : warnings) log().warn(warning);
}

void Supervisor::run() {
  map_rings();
  auto last_sample = Clock::now();
  for (;;) {
    std::vector<pollfd> fds{{wake_.fd(), POLLIN, 0}};
    std::vector<std::pair<size_t, uint64_t>> who;  // worker, generation of the polled process
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      for (size_t w = 0; w < watches_.size(); ++w) {
        const Watch& watch = watches_[w];
        if (watch.pidfd && !watch.record && !watch.gathering) {
          fds.push_back({watch.pidfd.get(), POLLIN, 0});
          who.emplace_back(w, watch.generation);
        }
      }
    }
    poll(fds.data(), fds.size(), kSampleEveryMs);
    // From here to the next poll this thread allocates: no fork may happen meanwhile.
    std::shared_lock<std::shared_mutex> no_fork(detail::fork_gate());
    if (fds[0].revents != 0) wake_.drain();
    bool map_more = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      map_more = !rings_to_map_.empty();
    }
    if (map_more) {  // a worker the autotuner added: its ring, as map_rings() did the others'
      no_fork.unlock();
      map_rings();
      no_fork.lock();
    }
    for (size_t i = 0; i < who.size(); ++i) {
      if (fds[i + 1].revents & POLLIN) report(who[i].first, false, 0, who[i].second);
    }
    if (Clock::now() - last_sample >= std::chrono::milliseconds(kSampleEveryMs)) {
      sample_memory();
      last_sample = Clock::now();
    }
  }
}

// Reads memory and the OOM counter of each live worker. The kernel counts an OOM kill when it
// sends SIGKILL, and a large worker takes a while to exit after that; so a reading becomes the
// "before" of a death only once the worker has lived through one more interval after it.
// Otherwise a reading taken between the kill and the exit would hide the OOM.
void Supervisor::sample_memory() {
  std::vector<std::string> warnings;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sample_resident_memory();
    if (samples_taken_++ % kSplitEverySamples == 0) warnings = follow_memory_growth();
  }
  for (const std::string& warning : warnings) log().warn(warning);
}

void Supervisor::sample_resident_memory() {
  for (Watch& w : watches_) {
    Seen& s = w.seen;
    if (w.record || w.gathering || s.pid <= 0) continue;
    if (auto m = read_process_memory(s.pid)) {
      s.memory = m;
      s.memory_time = Clock::now();
    }
    OomCounter counter = read_oom_counter(s.pid);
    if (readable(w.pidfd.get())) continue;
    if (s.pending) s.oom = *s.pending;
    s.pending = counter;
  }
}

// Reads smaps_rollup of each live worker; a worker that died since has no memory map left
// (nullopt) and is skipped.
std::vector<std::string> Supervisor::follow_memory_growth() {
  std::vector<std::string> warnings;
  if (!rings_mapped_) return warnings;
  const auto now = Clock::now();
  for (size_t worker = 0; worker < watches_.size(); ++worker) {
    const Watch& w = watches_[worker];
    if (w.record || w.gathering || w.seen.pid <= 0) continue;
    const std::optional<MemorySplit> split = read_memory_split(w.seen.pid);
    if (!split) continue;
    const uint64_t tasks = pool_.channel(worker).view.header().tasks_done.load();
    const std::optional<MemoryGrowth> growth = trends_[worker].add(*split, tasks, now);
    if (!growth) continue;
    ++growth_warnings_;
    warnings.push_back(memory_growth_warning(
        static_cast<int>(worker), w.seen.pid, *growth, w.seen.oom,
        cgroup_usage_bytes(w.seen.oom), pool_.workers_running(), settings_.persistent_workers));
  }
  return warnings;
}

std::shared_ptr<const DeathRecord> Supervisor::death_of(size_t worker) {
  return report(worker, false, 0);
}

std::shared_ptr<const DeathRecord> Supervisor::hang_of(size_t worker, int64_t timeout_ms) {
  return report(worker, true, timeout_ms);
}

// One report per death, whoever asks first; a second caller waits for the first. The watch
// thread may ask about a process the dispatcher has replaced since the poll (the pidfd it
// polled is closed, its number maybe reused): it gets null, as it does when the replacement
// happens while it waits. Without the generation, that wait would never end (the new watch
// has no record and no gatherer to announce one) and stop() would block on the thread.
std::shared_ptr<const DeathRecord> Supervisor::report(size_t worker, bool hang,
                                                      int64_t timeout_ms,
                                                      std::optional<uint64_t> generation) {
  std::unique_lock<std::mutex> lock(mutex_);
  Watch& w = watches_[worker];
  const uint64_t asked_about = generation.value_or(w.generation);
  if (w.generation != asked_about) return nullptr;
  if (w.record) return w.record;
  if (w.gathering) {
    gathered_.wait(lock, [&] { return w.record != nullptr || w.generation != asked_about; });
    return w.generation == asked_about ? w.record : nullptr;
  }
  w.gathering = true;
  const Seen seen = w.seen;
  MemoryHistory history = trends_[worker].history();
  lock.unlock();
  auto record = gather(worker, hang, timeout_ms, seen, std::move(history));
  lock.lock();
  w.record = record;
  w.gathering = false;
  gathered_.notify_all();
  return record;
}

// A worker that made no progress: notes whether it was stopped (job control, a debugger), asks
// it for its stack unless it is (a stopped process cannot answer), and kills it. SIGKILL ends
// a stopped or traced process too.
void Supervisor::end_hung_worker(ipc::RegionHeader& h, detail::ProcessRef process,
                                 DeathEvidence& e) {
  e.process_state = process_state(process.pid);
  if (e.process_state != 'T' && e.process_state != 't') e.stack = request_stack(h, process.pid);
  kill(process.pid, SIGKILL);
  detail::wait_exit(process, kKillWaitMs);  // gone or not, the evidence is gathered next
}

// Collects the evidence of one death, classifies it, writes the report and logs the summary.
std::shared_ptr<const DeathRecord> Supervisor::gather(size_t worker, bool hang,
                                                      int64_t timeout_ms, const Seen& w,
                                                      MemoryHistory history) {
  WorkerChannel& c = pool_.channel(worker);
  ipc::RegionHeader& h = c.view.header();
  DeathEvidence e;
  e.worker_id = static_cast<int>(worker);
  e.pid = w.pid;
  e.main_pid = getpid();
  e.hang = hang;
  e.timeout_ms = hang ? timeout_ms : settings_.timeout.count();
  e.loading_index = h.current_index.load();
  e.phase = h.phase.load();
  e.tasks_done = h.tasks_done.load();
  e.workers_running = pool_.workers_running();
  e.init_error.assign(h.init_error, strnlen(h.init_error, sizeof h.init_error));
  const detail::ProcessRef process{w.pid, w.pidfd, w.foreign_status};
  if (hang) end_hung_worker(h, process, e);
  e.status = detail::peek_exit(process).value_or(detail::ExitStatus{SIGKILL, 0, false});
  if (!hang) e.crash = ipc::snapshot(h.crash);
  // The handlers copied the worker's own maps next to the record.
  e.maps.assign(h.maps_text, std::min<uint64_t>(h.maps_bytes, sizeof h.maps_text));
  e.memory = w.memory;
  e.memory_age_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                          w.memory_time).count();
  e.memory_history = std::move(history);
  e.oom_before = w.oom;
  e.oom_after = reread_oom_counter(w.oom);
  e.ring_bytes = c.region->size();
  e.in_flight = in_flight_.snapshot(worker);
  e.options = settings_.reported;

  const Diagnosis d = diagnose(e);
  judge_sample(e, d);
  std::string error;
  const std::string path = write_crash_report(e, d, crash_dir_, error);
  if (path.empty()) log().warn("mploader: could not write a crash report: {}", error);
  auto record = std::make_shared<DeathRecord>();
  record->message = summary_text(e, d, path);
  record->quarantine = e.quarantine;
  if (e.quarantine && e.quarantine->quarantined) {
    settings_.quarantine->set_report(e.quarantine->index, path);
  }
  record->summary.worker_id = e.worker_id;
  record->summary.pid = e.pid;
  record->summary.cause = d.cause;
  record->summary.signal = e.status.signal;
  record->summary.exit_code = e.status.exit_code;
  for (const InFlightBatch& b : e.in_flight) {
    record->summary.in_flight_indices.insert(record->summary.in_flight_indices.end(),
                                             b.indices.begin(), b.indices.end());
  }
  record->summary.report_path = path;
  // One line now, so a death is on record even while the loop is busy; the whole summary
  // comes with the exception when the loop next asks for a batch.
  log().error("mploader: worker {} (pid {}) died [{}]: {}. Report: {}", e.worker_id, e.pid,
              to_string(d.cause), d.what_happened, path.empty() ? "not written" : path);
  return record;
}

// Only a crash record inside Dataset::get or write names the sample at fault: write_batch
// records the batch's first sample, and a SIGKILL (OOM, kill -9) or a hang records none. With
// quarantine on, every report says which samples are quarantined.
void Supervisor::judge_sample(DeathEvidence& e, const Diagnosis& d) const {
  if (!settings_.quarantine || !settings_.quarantine->enabled()) return;
  const std::optional<ipc::CrashSnapshot>& c = e.crash;
  const auto phase = static_cast<ipc::WorkerPhase>(c ? c->phase : 0);
  const bool in_sample = c && c->sample_index >= 0 &&
                         (phase == ipc::WorkerPhase::kDatasetGet ||
                          phase == ipc::WorkerPhase::kDatasetWrite);
  if (in_sample) {
    e.quarantine = settings_.quarantine->on_death(c->sample_index, to_string(d.cause));
  } else {
    e.quarantine = QuarantineVerdict{};
    e.quarantine->note = "this death names no sample (only a fatal signal inside Dataset::get "
                         "or write does): no sample is blamed";
  }
  e.quarantined = settings_.quarantine->list();
}

}  // namespace mploader::detail
