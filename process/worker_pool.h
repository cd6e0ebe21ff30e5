// process/: the main process starting, tying and reaping its workers.
//
// WorkerPool: the worker processes of one Loader and everything each shares with the main
// process: its shared-memory region, two eventfds, a socket for overflow segments, its pidfd,
// and the pool of its free payload slots.
//
// Owned and used by one thread (the Loader's). SlotPool (process/slot_pool.h) alone is
// thread-safe, because a Batch may be destroyed on any thread.
#pragma once

#include "ipc/event_fd.h"
#include "ipc/fd_passing.h"
#include "ipc/region_layout.h"
#include "ipc/shm_region.h"
#include "process/slot_pool.h"
#include "process/spawn.h"
#include "worker/worker_loop.h"
#include "worker/worker_spec.h"
#include "process/worker_process.h"

#include <mploader/collate.h>
#include <mploader/dataset.h>
#include <mploader/start_method.h>
#include <mploader/worker_info.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mploader::detail {

// Whether a region is page-locked for CUDA, and by which process: only that one unpins it.
struct RegionPin {
  bool pinned = false;
  int owner_pid = 0;
};

struct WorkerChannel {
  int id = 0;
  // Unpinned (when pinned) by its deleter, before it is unmapped, whenever the last batch
  // viewing it goes: epoch end, restart, destruction and exceptions alike.
  std::shared_ptr<RegionPin> pin = std::make_shared<RegionPin>();
  std::shared_ptr<ipc::ShmRegion> region;  // shared: batches keep it mapped after the pool
  ipc::RegionView view;
  ipc::EventFd task_event;
  ipc::EventFd done_event;
  ipc::SocketPair sockets;
  detail::WorkerProcess process;
  std::shared_ptr<SlotPool> slots;
  bool reaped = false;
  // No process, by choice (the autotuner's, or not yet started): its region and descriptors
  // wait for one. Its batches still viewed by the loop keep their slots.
  bool parked = false;
};

// Hands task `id` to the channel's worker: pushes it on the task ring and wakes the worker.
// The ring holds every descriptor id (kMaxDescriptors == kRingCapacity), so it cannot be full;
// if it is, the shared memory is corrupt, and this throws mploader::Error saying so.
void push_task(WorkerChannel& channel, uint32_t id);

// How a pool is laid out and started. The loader builds it (loader/component_settings.h);
// the pool keeps it unchanged.
struct PoolConfig {
  // Worker slots in this pool, each with its region (the slot probe's pool has one); with
  // autotuning the most processes it may run, of which `workers_running` start.
  int worker_slots = 0;
  int workers_running = 0;  // when the pool is built; 0: all
  // The count a worker's WorkerInfo::num_workers reports when it is not worker_slots: the slot
  // probe's one process stands in for the loader's pool and reports its slots. 0: worker_slots.
  int reported_worker_slots = 0;
  uint32_t num_descriptors = 0;
  uint32_t num_slots = 0;
  uint32_t max_indices = 0;
  uint64_t slot_bytes = 0;
  std::string shm_dir;
  bool pin_memory = false;  // page-lock each region in this process (LoaderOptions::pin_memory)
  StartMethod start_method = StartMethod::kFork;
  // Put into every worker's spec unchanged; the pool adds each worker's id and its slot count.
  worker::WorkerSettings worker_settings;
  // LoaderOptions::worker_init, for forked workers: a function cannot be encoded in a spec.
  std::function<void(const WorkerInfo&)> worker_init;
};

class WorkerPool {
 public:
  // Creates every region first (ShmError if any cannot be reserved), then forks the workers.
  WorkerPool(Dataset& dataset, Collator& collator, const PoolConfig& config);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  size_t size() const { return channels_.size(); }
  // Worker processes running now (channels not parked); any thread may read it.
  int workers_running() const { return workers_running_.load(std::memory_order_relaxed); }
  WorkerChannel& channel(size_t i) { return *channels_[i]; }
  const PoolConfig& config() const { return config_; }
  // Asks every worker to stop, waits briefly, kills stragglers, reaps all. Idempotent.
  void shutdown();
  // Replaces a dead worker: reaps it, resets its rings, rebuilds its free-slot stack (the
  // caller has dropped the dead worker's tasks), and forks a new process for the same region.
  // Payload slots still viewed by batches stay valid and keep their owners.
  void restart(size_t worker);
  // Starts a process for parked `worker`, as restart() does (the rings start empty).
  void unpark(size_t worker);
  // Stops `worker` in order and parks its channel. The caller has received every task it
  // issued to it and told the supervisor first, so that its exit is no death.
  void park(size_t worker);

 private:
  void create_channel(int id, const ipc::RegionGeometry& geometry);
  void start_worker(WorkerChannel& channel);
  void set_pinned(WorkerChannel& channel, bool pinned);
  void drop_other_channels_in_child(int keep);
  worker::WorkerSpec worker_spec(const WorkerChannel& channel) const;
  ipc::Result<detail::WorkerProcess> launch(WorkerChannel& channel);

  Dataset& dataset_;
  Collator& collator_;
  PoolConfig config_;
  std::vector<std::unique_ptr<WorkerChannel>> channels_;
  std::atomic<int> workers_running_{0};
};

}  // namespace mploader::detail
