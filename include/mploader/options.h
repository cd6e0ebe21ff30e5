/// @file
/// LoaderOptions: every knob of a Loader, validated when the Loader is constructed.
#pragma once

#include <mploader/collate.h>
#include <mploader/sampler.h>
#include <mploader/start_method.h>
#include <mploader/streaming.h>
#include <mploader/worker_info.h>

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>

namespace mploader {

/// For LoaderOptions::num_workers and prefetch_factor: the Loader chooses the value, and keeps
/// choosing it while it runs, from what it measures (docs/tuning-num-workers.md).
inline constexpr int64_t kAuto = -1;

/// Every option of a Loader. The Loader copies and checks them at construction: a wrong value
/// is an OptionError naming the option, the value and the fix. A plain struct: no locking.
struct LoaderOptions {
  /// Samples per batch (ignored when batch_sampler is set). >= 1.
  int64_t batch_size = 1;
  /// Worker processes; 0 loads in the calling thread behind the same API. kAuto: the Loader
  /// adds workers while the loop waits for data and a CPU is free (past the CPUs for workers
  /// that wait on I/O), and removes them while they wait for the loop; between batches, or
  /// at epoch boundaries for a StreamingDataset. LoaderStats::autotune lists each change.
  int64_t num_workers = 0;
  /// Batches each worker may have in flight ahead of the training loop. >= 1. kAuto: starts
  /// at 2 and rises, up to 4, while the loop waits for data that workers are not busy making.
  int64_t prefetch_factor = 2;
  /// Random order per epoch (RandomSampler(seed)); ignored when sampler is set. For a
  /// StreamingDataset: the shards' order, and so their assignment to ranks and workers.
  bool shuffle = false;
  uint64_t seed = 0;  ///< Seeds shuffling (seed + epoch) and the workers' generators.
  /// Drop the last batch when it is short; ignored when batch_sampler is set.
  bool drop_last = false;
  /// Deliver batches in sampler order. false: deliver whichever batch is ready first.
  bool in_order = true;
  /// Longest wait for one batch; 0 waits forever.
  std::chrono::milliseconds timeout{0};
  /// Directory for the shared-memory rings (a tmpfs such as /dev/shm). Empty: anonymous memory
  /// (memfd), which is not limited by the size of /dev/shm.
  std::string shm_dir;
  /// Bytes of one ring slot. 0: estimated from sample 0 (the first batch when the collator
  /// cannot estimate from one sample), with a quarter of headroom. That sample is read in a
  /// short-lived worker process started like the others, never in the training process; its
  /// failures are the same WorkerError / WorkerCrashed / TimeoutError an epoch raises.
  uint64_t max_batch_bytes = 0;
  /// The most bytes of shared memory the rings may take together; 0: no limit of its own. The
  /// rings never take more than the free space of shm_dir's file system, nor half of what
  /// the memory cgroup has left; with num_workers = kAuto these also cap the worker count.
  uint64_t max_shm_bytes = 0;
  /// A batch larger than a slot travels in a one-off shared segment; false makes it an error.
  bool allow_overflow = true;
  /// Page-lock the rings in this process (cudaHostRegister), so that copies of batches to a GPU
  /// (Tensor::to(device, non_blocking) or DevicePrefetcher) go straight from shared memory by
  /// DMA with no staging copy. Workers never touch CUDA. Without a usable CUDA device or with a
  /// CPU-only libtorch it logs why once and goes on unpinned. Overflow segments stay unpinned.
  bool pin_memory = false;
  // Where crash reports go, one JSON file per worker death, never overwritten. Empty: the
  // environment variable MPLOADER_CRASH_DIR, else ./mploader-crashes. Read them with
  // mploader-report.
  std::string crash_dir;
  /// Replace a dead worker and issue its batches again, at most this many times per epoch;
  /// every index is still delivered exactly once. 0: a death raises WorkerCrashed.
  int64_t max_restarts_per_epoch = 0;
  /// Quarantine a sample after this many worker deaths on it (0: off; 2 is a good value): a
  /// worker killed by a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) inside
  /// Dataset::get or write names the sample in its crash record, and once as many deaths name
  /// the same sample, it is left out of its batch (delivered one sample shorter) and of every
  /// later batch, listed in LoaderStats::quarantined and skipped, in the crash report and in
  /// state_dict(). Needs max_restarts_per_epoch >= 1 (the deaths before the quarantine are
  /// restarts); the restarts spent on a sample that ends quarantined are given back.
  int64_t quarantine_after = 0;
  /// The most samples quarantined in one epoch (quarantine_after > 0); one more death that
  /// would quarantine a sample is handled as any other death, so a dataset where every sample
  /// crashes fails instead of being skipped whole.
  int64_t max_quarantined_per_epoch = 16;
  /// How samples become a batch; null stacks them (stack_collate()).
  std::shared_ptr<Collator> collate;
  /// Index order; null means RandomSampler(seed) when shuffle, else SequentialSampler.
  std::shared_ptr<Sampler> sampler;
  /// Whole batches; overrides sampler, batch_size and drop_last.
  std::shared_ptr<BatchSampler> batch_sampler;
  StartMethod start_method = StartMethod::kFork;  ///< fork, spawn or forkserver (StartMethod).
  /// Keep the workers (and their rings) from one epoch to the next. false: they stop at the end
  /// of each epoch and fresh ones start with the next, as PyTorch's default does; memory a
  /// worker gathers during an epoch goes with it.
  bool persistent_workers = false;
  /// Runs in each worker after it starts, before its first sample: the place to open files and
  /// connections that must not cross a fork (HDF5, databases, sockets). An exception here is
  /// reported as a WorkerCrashed naming worker_init.
  std::function<void(const WorkerInfo&)> worker_init;
  /// This process's rank in a distributed job, in [0, world_size); shows in worker_info().
  int64_t rank = 0;
  /// Processes in the distributed job. 0: world size and rank come from the launcher's
  /// environment (launch_info_from_env(): torchrun, SLURM, Open MPI; 1 and 0 without one),
  /// unless `rank` is set: then the world size stays unknown (0), which a map-style dataset
  /// does not need and a StreamingDataset refuses. A StreamingDataset shares its shards out
  /// among the ranks.
  int64_t world_size = 0;
  /// StreamingDataset only: each worker cuts its stream into blocks of this many samples and
  /// hands each block out in a random order (0 or 1: read order). It is also the most samples
  /// a worker holds read ahead of the batch it builds. The order is the same in every run
  /// with the same seed and epoch, and is computed per sample, so it costs no memory.
  int64_t shuffle_buffer = 0;
  /// StreamingDataset only: how ranks with different numbers of batches are evened out.
  UnevenRanks uneven_ranks = UnevenRanks::kPad;
};

/// @var LoaderOptions::crash_dir
/// Where crash reports go, one JSON file per worker death, never overwritten. Empty: the
/// environment variable MPLOADER_CRASH_DIR, else ./mploader-crashes. Read them with
/// mploader-report.

}  // namespace mploader
