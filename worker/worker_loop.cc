#include "worker/worker_loop.h"

#include "ipc/fd_passing.h"
#include "ipc/shm_region.h"
#include "batch/batch_plan.h"
#include "worker/crash_handler.h"
#include "batch/exception_text.h"
#include "worker/worker_info_setter.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>

namespace mploader::worker {
namespace {

// How often an idle worker checks that its parent still exists (a fallback for PDEATHSIG).
constexpr int kIdleCheckMs = 1000;

void fail(ipc::TaskDescriptor& d, ipc::TaskStatus status, int64_t index, const std::string& type,
          const std::string& message) {
  d.status = static_cast<uint32_t>(status);
  d.failed_index = index;
  ipc::copy_text(d.error_type, sizeof d.error_type, type.c_str());
  ipc::copy_text(d.error_message, sizeof d.error_message, message.c_str());
}

class Worker {
 public:
  explicit Worker(const WorkerContext& c) : c_(c), header_(c.region.header()) {}

  int run() {
    if (!run_init()) return kInitFailedExit;
    uint32_t id;
    while (next_task(id)) {
      const auto started = std::chrono::steady_clock::now();
      run_task(id);
      const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - started);
      header_.busy_ns.fetch_add(static_cast<uint64_t>(busy.count()), std::memory_order_relaxed);
      header_.tasks_done.fetch_add(1, std::memory_order_relaxed);
      // Cannot be full: it holds every descriptor id (kMaxDescriptors == kRingCapacity), and
      // the main process hands an id out again only after popping it.
      (void)c_.region.done_ring().try_push(id);
      notify(c_.done_event_fd);
    }
    return 0;
  }

 private:
  static void notify(int fd) {
    uint64_t one = 1;
    while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }

  bool parent_alive() const { return getppid() == c_.parent_pid; }

  // Seeds libtorch's default generator and std::rand for `epoch`, so that random
  // augmentation differs between workers and epochs yet repeats from run to run.
  void enter_epoch(uint64_t epoch) {
    const uint64_t seed = worker_seed(c_.base_seed, epoch, c_.worker_id);
    at::manual_seed(seed);
    std::srand(static_cast<unsigned>(seed));
    set_worker_epoch(epoch, seed);
    epoch_ = epoch;
  }

  bool run_init() {
    set_worker_info(WorkerInfo{c_.worker_id, c_.num_workers, static_cast<int>(getpid()), 0, 0,
                               c_.rank});
    enter_epoch(c_.first_epoch);
    if (!c_.init) return true;
    try {
      c_.init(*worker_info());
      return true;
    } catch (...) {
      auto [type, message] = describe_current_exception();
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
      pollfd p{c_.task_event_fd, POLLIN, 0};
      int rc = poll(&p, 1, kIdleCheckMs);
      if (rc > 0) {
        uint64_t value;
        while (read(c_.task_event_fd, &value, sizeof value) < 0 && errno == EINTR) {
        }
      }
      if (!parent_alive()) return false;
    }
  }

  bool cancelled(const ipc::TaskDescriptor& d) const {
    return d.generation < header_.cancel_generation.load(std::memory_order_acquire);
  }

  void set_phase(ipc::WorkerPhase phase) {
    header_.phase.store(static_cast<uint32_t>(phase), std::memory_order_relaxed);
  }

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
    task_indices_ = c_.region.indices(id);
    if (d.kind == static_cast<uint32_t>(ipc::TaskKind::kProbe)) return run_probe(id, d);
    // An empty batch (the loader never sends one) takes the whole-batch path, whose layout()
    // refuses it; streaming would publish it with no layout at all.
    if (c_.collator->streams() && d.num_indices > 0) return run_streaming(id, d);
    std::vector<Sample> samples;
    if (!load_samples(id, d, samples)) return;
    PlannedBatch plan;
    Destination dest;
    if (!plan_layout([&] { return c_.collator->layout(samples); }, d, plan)) return;
    if (!open_destination(d, plan, dest)) return;
    if (!collate([&] { c_.collator->fill(samples, dest.views); }, d)) return;
    publish(id, d, dest);
  }

  // Each sample goes into the slot as soon as it is loaded, so the worker holds one sample
  // rather than a batch of them: less memory, and the sample is still in cache when copied.
  void run_streaming(uint32_t id, ipc::TaskDescriptor& d) {
    const int64_t* indices = c_.region.indices(id);
    const size_t rows = d.num_indices;
    PlannedBatch plan;
    Destination dest;
    for (size_t row = 0; row < rows; ++row) {
      Sample sample;
      if (!load_sample(d, indices[row], sample)) return;
      if (row == 0) {
        if (!plan_layout([&] { return c_.collator->layout_from_first(sample, rows); }, d, plan)) {
          return;
        }
        if (!open_destination(d, plan, dest)) return;
      }
      if (!collate([&] { c_.collator->fill_row(row, sample, plan.layout, dest.views); }, d)) {
        return;
      }
    }
    header_.current_index.store(-1, std::memory_order_relaxed);
    publish(id, d, dest);
  }

  // Sizes a batch of d.probe_batch_size for the main process, which must not run dataset code
  // itself (a lazily opened file would be shared by every forked worker; a crash would kill
  // the training process). From sample 0 when the collator can estimate, else from the whole
  // probe batch scaled up. The tensor table of that batch goes back too: its limits are
  // checked here, before any epoch runs.
  void run_probe(uint32_t id, ipc::TaskDescriptor& d) {
    const int64_t* indices = c_.region.indices(id);
    std::vector<Sample> samples(1);
    if (d.num_indices == 0 || !load_sample(d, indices[0], samples[0])) return;
    std::optional<size_t> estimate;
    if (!collate([&] { estimate = c_.collator->estimate_batch_bytes(samples[0],
                                                                    d.probe_batch_size); },
                 d)) {
      return;
    }
    if (!estimate) {
      samples.resize(d.num_indices);
      for (uint32_t i = 1; i < d.num_indices; ++i) {
        if (!load_sample(d, indices[i], samples[i])) return;
      }
    }
    header_.current_index.store(-1, std::memory_order_relaxed);
    PlannedBatch plan;
    if (!plan_layout([&] { return c_.collator->layout(samples); }, d, plan)) return;
    write_tensor_table(plan, d);
    d.batch_bytes = estimate ? *estimate
                             : plan.total_bytes * d.probe_batch_size / samples.size();
    d.status = static_cast<uint32_t>(ipc::TaskStatus::kOk);
  }

  bool load_samples(uint32_t id, ipc::TaskDescriptor& d, std::vector<Sample>& samples) {
    const int64_t* indices = c_.region.indices(id);
    samples.resize(d.num_indices);
    for (uint32_t i = 0; i < d.num_indices; ++i) {
      if (!load_sample(d, indices[i], samples[i])) return false;
    }
    header_.current_index.store(-1, std::memory_order_relaxed);
    return true;
  }

  // False when the task was cancelled or the dataset threw (the descriptor then says which).
  bool load_sample(ipc::TaskDescriptor& d, int64_t index, Sample& out) {
    if (header_.stop.load(std::memory_order_relaxed) != 0) _exit(0);
    if (cancelled(d)) {
      d.status = static_cast<uint32_t>(ipc::TaskStatus::kCancelled);
      return false;
    }
    header_.current_index.store(index, std::memory_order_relaxed);
    set_phase(ipc::WorkerPhase::kDatasetGet);
    try {
      out = c_.dataset->get(index);
      return true;
    } catch (...) {
      auto [type, message] = describe_current_exception();
      fail(d, ipc::TaskStatus::kDatasetError, index, type, message);
      header_.current_index.store(-1, std::memory_order_relaxed);
      return false;
    }
  }

  // Runs a collator step; a throw fails the task with the collator's message.
  template <typename Step>
  bool collate(Step&& step, ipc::TaskDescriptor& d) {
    set_phase(ipc::WorkerPhase::kCollate);
    try {
      step();
      return true;
    } catch (const SampleError& e) {
      // The collator names rows; the loop knows samples by their dataset indices.
      const int64_t index = e.row() < d.num_indices ? task_indices_[e.row()] : -1;
      fail(d, ipc::TaskStatus::kCollateError, index, describe_current_exception().first,
           e.message_for(task_indices_, d.num_indices));
      return false;
    } catch (...) {
      auto [type, message] = describe_current_exception();
      fail(d, ipc::TaskStatus::kCollateError, -1, type, message);
      return false;
    }
  }

  template <typename MakeLayout>
  bool plan_layout(MakeLayout&& make_layout, ipc::TaskDescriptor& d, PlannedBatch& plan) {
    std::string error;
    if (!collate([&] { error = plan_batch(make_layout(), plan); }, d)) return false;
    if (error.empty()) return true;
    fail(d, ipc::TaskStatus::kCollateError, -1, "layout", error);
    return false;
  }

  // Where a batch is written: its slot, or a one-off segment when it does not fit.
  struct Destination {
    bool fits = false;
    ipc::ShmRegion overflow;
    std::vector<at::Tensor> views;
  };

  bool open_destination(ipc::TaskDescriptor& d, const PlannedBatch& plan, Destination& dest) {
    write_tensor_table(plan, d);
    dest.fits = d.payload_slot >= 0 && plan.total_bytes <= header_.slot_bytes;
    if (!dest.fits && !c_.allow_overflow && d.payload_slot >= 0) {
      d.status = static_cast<uint32_t>(ipc::TaskStatus::kTooLarge);
      return false;
    }
    uint8_t* base;
    if (dest.fits) {
      base = c_.region.slot(static_cast<uint32_t>(d.payload_slot));
    } else {
      auto segment = ipc::ShmRegion::create(std::max<uint64_t>(plan.total_bytes, 1), "",
                                            "mploader-overflow");
      if (!segment.ok()) {
        fail(d, ipc::TaskStatus::kInternalError, -1, "shared memory",
             "overflow segment of " + std::to_string(plan.total_bytes) +
                 " bytes: " + segment.error().describe());
        return false;
      }
      dest.overflow = segment.take();
      base = static_cast<uint8_t*>(dest.overflow.base());
    }
    return collate([&] { dest.views = views_into(base, plan); }, d);
  }

  void publish(uint32_t id, ipc::TaskDescriptor& d, Destination& dest) {
    set_phase(ipc::WorkerPhase::kPublish);
    if (!dest.fits) {
      d.payload_slot = -1;  // tells the main process to receive the segment
      ipc::Status sent = ipc::send_fd(c_.socket_fd, dest.overflow.fd(), id);
      if (!sent.ok()) {
        return fail(d, ipc::TaskStatus::kInternalError, -1, "fd passing",
                    sent.error().describe());
      }
    }
    d.status = static_cast<uint32_t>(ipc::TaskStatus::kOk);
  }

  const WorkerContext& c_;
  ipc::RegionHeader& header_;
  uint64_t epoch_ = 0;
  const int64_t* task_indices_ = nullptr;  // of the task running, for collate errors
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
