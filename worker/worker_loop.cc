#include "worker/worker_loop.h"

#include "core/assembly.h"
#include "core/exception_text.h"
#include "ipc/fd_passing.h"
#include "ipc/shm_region.h"
#include "core/loading_scope.h"
#include "worker/crash_handler.h"
#include "worker/skip_log.h"
#include "worker/stage_clock.h"
#include "worker/worker_info_setter.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <mploader/streaming.h>

#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mploader::worker {
namespace {

// How often an idle worker checks that its parent still exists (a fallback for PDEATHSIG).
constexpr int kIdleCheckMs = 1000;

void set_worker_phase(ipc::RegionHeader& header, ipc::WorkerPhase phase) {
  header.phase.store(static_cast<uint32_t>(phase), std::memory_order_relaxed);
}

// The stage a sample's phase counts as: the dataset's own work is reading, until it names
// decoding or transforms (mploader/stage_timer.h).
ipc::Stage stage_of(ipc::WorkerPhase phase) {
  switch (phase) {
    case ipc::WorkerPhase::kDatasetGet:
    case ipc::WorkerPhase::kDatasetWrite:
    case ipc::WorkerPhase::kDatasetWriteBatch: return ipc::Stage::kRead;
    case ipc::WorkerPhase::kPublish: return ipc::Stage::kHandOff;
    default: return ipc::Stage::kWrite;
  }
}

// Where a task's batch goes: its ring slot, or a one-off overflow segment when it does not fit
// (or was sent without a slot). Tells the main process, through the region header, which sample
// and phase the worker is in, for the crash and hang reports.
class TaskSink : public detail::BatchSink {
 public:
  // `slot_promised`: the main process counted a free slot for this task (kSlotAtStart).
  TaskSink(const WorkerContext& c, ipc::TaskDescriptor& d, bool slot_promised,
           StageClock& clock)
      : c_(c), header_(c.region.header()), d_(d), slot_promised_(slot_promised), clock_(clock) {}

  bool begin_sample(int64_t index, ipc::WorkerPhase phase) override {
    if (header_.stop.load(std::memory_order_relaxed) != 0) _exit(0);
    if (d_.generation < header_.cancel_generation.load(std::memory_order_acquire)) return false;
    header_.current_index.store(index, std::memory_order_relaxed);
    set_worker_phase(header_, phase);
    clock_.enter(stage_of(phase));
    return true;
  }

  void begin_collate(int64_t index) override {
    header_.current_index.store(index, std::memory_order_relaxed);
    set_worker_phase(header_, ipc::WorkerPhase::kCollate);
    clock_.enter(ipc::Stage::kWrite);
  }

  detail::BatchFailure open(const detail::PlannedBatch& plan, uint8_t*& base) override {
    detail::write_tensor_table(plan, d_);
    fits_ = slot_promised_ && plan.total_bytes <= header_.slot_bytes;
    if (fits_) return pop_slot(base);
    if (!c_.spec.settings.allow_overflow && slot_promised_) {
      return detail::BatchFailure{ipc::TaskStatus::kTooLarge, -1, "", ""};
    }
    auto segment = ipc::ShmRegion::create(std::max<uint64_t>(plan.total_bytes, 1), "",
                                          "mploader-overflow");
    if (!segment.ok()) {
      return detail::BatchFailure{ipc::TaskStatus::kInternalError, -1, "shared memory",
                                  "overflow segment of " + std::to_string(plan.total_bytes) +
                                      " bytes: " + segment.error().describe()};
    }
    overflow_ = segment.take();
    base = static_cast<uint8_t*>(overflow_.base());
    return {};
  }

  // Hands an overflow segment to the main process; a slot needs nothing more.
  detail::BatchFailure publish(uint32_t id) {
    set_worker_phase(header_, ipc::WorkerPhase::kPublish);
    clock_.enter(ipc::Stage::kHandOff);
    if (fits_) return {};
    d_.payload_slot = ipc::kNoSlot;  // tells the main process to receive the segment
    ipc::Status sent = ipc::send_fd(c_.spec.socket_fd, overflow_.fd(), id);
    if (sent.ok()) return {};
    return detail::BatchFailure{ipc::TaskStatus::kInternalError, -1, "fd passing",
                                sent.error().describe()};
  }

 private:
  // Takes the slot freed last, so the batch goes into memory the training loop used moments
  // ago (still in cache), and names it in the descriptor: from here on, whatever the task's
  // outcome, the main process gets the slot back through the descriptor.
  detail::BatchFailure pop_slot(uint8_t*& base) {
    uint32_t slot = 0;
    if (!header_.free_slots.try_pop(slot) || slot >= header_.num_slots) {
      fits_ = false;
      return detail::BatchFailure{
          ipc::TaskStatus::kInternalError, -1, "shared memory",
          "the shared free-slot stack is corrupt: the main process promised this task one of " +
              std::to_string(header_.num_slots) + " slots, but the stack " +
              (slot >= header_.num_slots ? "gave slot " + std::to_string(slot)
                                         : std::string("is empty")) +
              " (a bug in mploader, or dataset code writing out of bounds); recreate the loader"};
    }
    d_.payload_slot = static_cast<int32_t>(slot);
    base = c_.region.slot(slot);
    return {};
  }

  const WorkerContext& c_;
  ipc::RegionHeader& header_;
  ipc::TaskDescriptor& d_;
  const bool slot_promised_;
  StageClock& clock_;
  bool fits_ = false;
  ipc::ShmRegion overflow_;
};

class Worker {
 public:
  explicit Worker(const WorkerContext& c) : c_(c), header_(c.region.header()) {}

  int run() {
    if (!run_init()) return kInitFailedExit;
    uint32_t id;
    while (next_task(id)) {
      const auto started = StageClock::Clock::now();
      clock_.start();
      run_task(id);
      const auto finished = StageClock::Clock::now();
      const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(finished - started);
      clock_.finish(static_cast<uint64_t>(busy.count()), header_);
      header_.busy_ns.fetch_add(static_cast<uint64_t>(busy.count()), std::memory_order_relaxed);
      header_.tasks_done.fetch_add(1, std::memory_order_relaxed);
      if (finished - cpu_sampled_ >= kCpuSampleInterval) publish_cpu_time(finished);
      // Cannot be full: it holds every descriptor id (kMaxDescriptors == kRingCapacity), and
      // the main process hands an id out again only after popping it.
      (void)c_.region.done_ring().try_push(id);
      notify(c_.spec.done_event_fd);
    }
    return 0;
  }

 private:
  static void notify(int fd) {
    uint64_t one = 1;
    while (write(fd, &one, sizeof one) < 0) {
      if (errno == EBADF) _exit(kDescriptorsClosedExit);
      if (errno != EINTR) break;
    }
  }

  bool parent_alive() const { return getppid() == c_.spec.parent_pid; }

  // The CPU time of this process since its first task, for the main process to compare with
  // the busy time (relaxed: a statistic, read whenever).
  void publish_cpu_time(StageClock::Clock::time_point now) {
    const uint64_t cpu = process_cpu_ns();
    header_.cpu_ns.store(cpu_carried_ + (cpu > cpu_base_ ? cpu - cpu_base_ : 0),
                         std::memory_order_relaxed);
    cpu_sampled_ = now;
  }

  // Seeds libtorch's default generator and std::rand for `epoch`, so that random
  // augmentation differs between workers and epochs yet repeats from run to run.
  void enter_epoch(uint64_t epoch) {
    const uint64_t seed = worker_seed(c_.spec.settings.seed, epoch, c_.spec.worker_id);
    // The CPU generator alone: at::manual_seed also seeds each CUDA device's generator, which
    // starts CUDA, and in a worker forked from a training process that started CUDA first
    // every CUDA call fails ("initialization error"). Workers do not use CUDA.
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      cpu.set_current_seed(seed);
    }
    std::srand(static_cast<unsigned>(seed));
    set_worker_epoch(epoch, seed);
    detail::set_process_loading_context(LoadingContext{c_.spec.settings.seed, epoch});
    epoch_ = epoch;
  }

  bool run_init() {
    detail::set_process_skip_sink(&skip_log_);
    set_worker_info(WorkerInfo{c_.spec.worker_id, c_.spec.worker_slots,
                               static_cast<int>(getpid()), 0, 0, c_.spec.settings.rank,
                               c_.spec.settings.world_size});
    enter_epoch(c_.spec.settings.first_epoch);
    cpu_base_ = process_cpu_ns();  // what follows counts from here (worker_init included)
    // Added to the slot's earlier processes', as busy_ns is: the main process reads
    // differences of these counters across a restart or an autotuner's change.
    cpu_carried_ = header_.cpu_ns.load(std::memory_order_relaxed);
    if (!c_.init) return true;
    try {
      c_.init(*worker_info());
      return true;
    } catch (...) {
      auto [type, message] = detail::describe_current_exception();
      const std::string text = type + ": " + message;
      ipc::copy_text(header_.init_error, sizeof header_.init_error, text.c_str());
      return false;
    }
  }

  // False on shutdown, stop, or a parent that has gone away.
  bool next_task(uint32_t& id) {
    set_phase(ipc::WorkerPhase::kIdle);
    for (;;) {
      if (header_.stop.load(std::memory_order_acquire) != 0) return false;
      if (c_.region.task_ring().try_pop(id)) {
        return id != ipc::kShutdownId && c_.region.valid_descriptor_id(id);
      }
      publish_cpu_time(StageClock::Clock::now());  // idle now: the count is complete
      pollfd p{c_.spec.task_event_fd, POLLIN, 0};
      int rc = poll(&p, 1, kIdleCheckMs);
      if (rc > 0 && (p.revents & POLLNVAL) != 0) _exit(kDescriptorsClosedExit);
      if (rc > 0) {
        uint64_t value;
        while (read(c_.spec.task_event_fd, &value, sizeof value) < 0 && errno == EINTR) {
        }
      }
      if (!parent_alive()) return false;
    }
  }

  void set_phase(ipc::WorkerPhase phase) { set_worker_phase(header_, phase); }

  void run_task(uint32_t id) {
    // A worker's tensors never reach autograd: they are copied into the slot and dropped.
    // Inference mode skips autograd's bookkeeping on every op the dataset and collator run
    // (view metadata, version counters), a measured share of per-sample cost.
    c10::InferenceMode no_autograd;
    ipc::TaskDescriptor& d = c_.region.descriptor(id);
    header_.current_sequence.store(d.sequence, std::memory_order_relaxed);
    if (d.epoch != epoch_) enter_epoch(d.epoch);
    d.num_tensors = 0;
    d.batch_bytes = 0;
    d.failed_index = -1;
    const bool slot_promised = d.payload_slot == ipc::kSlotAtStart;
    d.payload_slot = ipc::kNoSlot;  // until a slot is popped: the main process reads it back
    TaskSink sink(c_, d, slot_promised, clock_);
    const int64_t* indices = c_.region.indices(id);
    detail::PlannedBatch plan;
    detail::BatchFailure failure;
    if (d.kind == static_cast<uint32_t>(ipc::TaskKind::kProbe)) {
      uint64_t bytes = 0;
      failure = detail::probe_batch(*c_.dataset, *c_.collator, indices, d.num_indices,
                                    d.probe_batch_size, sink, plan, bytes);
      if (failure.ok()) {
        detail::write_tensor_table(plan, d);
        d.batch_bytes = bytes;
      }
    } else {
      if (d.num_upcoming_shards > 0) announce_upcoming_shards(d);
      failure = detail::assemble_batch(*c_.dataset, *c_.collator, indices, d.num_indices, sink,
                                       plan);
      if (failure.ok()) failure = sink.publish(id);
    }
    header_.current_index.store(-1, std::memory_order_relaxed);
    detail::write_failure(failure, d);
  }


  // Tells a StreamingDataset which shards its stream reads from now on. Advisory: a dataset
  // that cannot prefetch says so when it reads the shard, through the batch that needs it.
  void announce_upcoming_shards(const ipc::TaskDescriptor& d) {
    if (streaming_ == nullptr) return;
    const uint32_t n = std::min(d.num_upcoming_shards, ipc::kMaxUpcomingShards);
    try {
      streaming_->prefetch_shards(
          std::vector<size_t>(d.upcoming_shards, d.upcoming_shards + n));
    } catch (...) {
    }
  }

  const WorkerContext& c_;
  StreamingDataset* streaming_ = dynamic_cast<StreamingDataset*>(c_.dataset);
  ipc::RegionHeader& header_;
  uint64_t epoch_ = 0;
  StageClock clock_;
  uint64_t cpu_base_ = 0;
  uint64_t cpu_carried_ = 0;  // the slot's earlier processes' CPU time
  StageClock::Clock::time_point cpu_sampled_{};
  RegionSkipLog skip_log_{header_};  // where report_skipped_sample() goes in this process
};

}  // namespace

// A worker allocates a whole batch of samples and frees it again for every task. With glibc's
// defaults, large samples go to fresh mmaps and the heap top is trimmed after each batch, so
// every batch pays for page faults and brk calls again (measured: 5-10x slower on 150 KB
// samples). Keep freed memory for reuse instead; the heap stays near one batch of samples.
void tune_malloc_for_batches() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
}

int run_worker(const WorkerContext& context) {
  // Thread-pool state copied by fork belongs to the parent's threads: start afresh, with one
  // intra-op thread, since the workers themselves are the parallelism.
  at::init_num_threads();
  at::set_num_threads(1);
  tune_malloc_for_batches();
  // Without handlers a crash still shows as a signal in the main process, only with less
  // evidence, so a failure to install them is not fatal (and a worker has nowhere to say it).
  (void)install_crash_handlers(context.region.header());
  return Worker(context).run();
}

}  // namespace mploader::worker
