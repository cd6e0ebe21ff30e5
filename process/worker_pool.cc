#include "process/worker_pool.h"

#include "util/cuda_pinning.h"
#include "process/fork_guard.h"
#include "util/units.h"
#include "process/forkserver.h"
#include "process/launcher.h"
#include "process/spawn.h"

#include <mploader/errors.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>

namespace mploader::detail {
namespace {

// How long an orderly stop may take before workers are killed. A worker stops between samples,
// so this bounds one sample's load time.
constexpr int kStopGraceMs = 5000;

[[noreturn]] void throw_shm_error(const ipc::SysError& e, uint64_t bytes, const PoolConfig& c,
                                  int worker_id, int64_t free_bytes) {
  const std::string where = c.shm_dir.empty() ? "anonymous shared memory (memfd)"
                                              : "'" + c.shm_dir + "'";
  std::string msg = "mploader: cannot reserve " + human_bytes(bytes) + " of shared memory for "
                    "worker " + std::to_string(worker_id) + "'s ring in " + where;
  if (free_bytes >= 0 && !c.shm_dir.empty()) msg += " (" + human_bytes(free_bytes) + " free)";
  msg += ": " + e.describe() + ". Each worker needs " + std::to_string(c.num_slots) +
         " slots of " + human_bytes(c.slot_bytes) +
         " (prefetch_factor + 1 slots; slot size from max_batch_bytes or the first sample). "
         "Fix: lower prefetch_factor, batch_size or max_batch_bytes; point shm_dir at a larger "
         "tmpfs; in Docker run with --shm-size=<N>g or --ipc=host.";
  throw ShmError(msg, bytes, free_bytes < 0 ? 0 : static_cast<uint64_t>(free_bytes));
}

bool out_of_descriptors(const ipc::SysError& e) { return e.error == EMFILE || e.error == ENFILE; }

// describe() names the descriptor limit and its fix for EMFILE and ENFILE.
template <class T>
T checked(ipc::Result<T> r, const std::string& what) {
  if (!r.ok()) throw Error("mploader: " + what + ": " + r.error().describe());
  return r.take();
}

}  // namespace

void push_task(WorkerChannel& c, uint32_t id) {
  if (!c.view.task_ring().try_push(id)) {
    throw Error("mploader: worker " + std::to_string(c.id) + "'s task ring is full, which its "
                "size rules out: the shared ring is corrupt (a bug in mploader, or dataset code "
                "writing out of bounds). The loader cannot go on; recreate it.");
  }
  c.task_event.notify();
}

WorkerPool::WorkerPool(Dataset& dataset, Collator& collator, const PoolConfig& config)
    : dataset_(dataset), collator_(collator), config_(config) {
  if (config.num_slots > ipc::kMaxSlots) {  // options_check bounds prefetch_factor below this
    throw Error("mploader: " + std::to_string(config.num_slots) + " payload slots per worker "
                "is more than the region's free-slot stack holds (" +
                std::to_string(ipc::kMaxSlots) + "): a bug in mploader. Lower prefetch_factor.");
  }
  const auto geometry = ipc::RegionGeometry::compute(config.num_descriptors, config.num_slots,
                                                     config.max_indices, config.slot_bytes);
  const uint64_t total = geometry.total_bytes * static_cast<uint64_t>(config.worker_slots);
  if (!config.shm_dir.empty()) {
    const int64_t free_bytes = ipc::free_bytes_of_dir(config.shm_dir);
    if (free_bytes >= 0 && static_cast<uint64_t>(free_bytes) < total) {
      throw_shm_error(ipc::SysError{"statvfs", ENOSPC, "all rings together"}, total, config_, 0,
                      free_bytes);
    }
  }
  const int running = config.workers_running > 0
                          ? std::min(config.workers_running, config.worker_slots)
                          : config.worker_slots;
  check_fork_safety(running);
  // Every region now, though a parked one's pages stay untouched: the file system's free
  // space is checked once against them all, and a worker added later cannot run out of it.
  for (int id = 0; id < config.worker_slots; ++id) create_channel(id, geometry);
  try {
    for (int id = 0; id < running; ++id) start_worker(*channels_[id]);
  } catch (...) {
    shutdown();
    throw;
  }
  for (size_t id = static_cast<size_t>(running); id < channels_.size(); ++id) {
    channels_[id]->parked = true;
  }
  workers_running_.store(running, std::memory_order_relaxed);
  for (auto& channel : channels_) {
    if (!channel->parked) set_pinned(*channel, config_.pin_memory);
  }
}

// Pinning comes after the fork of the region's worker, and is undone around a restart's fork:
// a driver may mark page-locked ranges MADV_DONTFORK, which would leave a forked worker
// without its own ring. Spawned and forkserver workers map the ring afresh, so for them it
// does not matter; the order is the same for simplicity.
void WorkerPool::set_pinned(WorkerChannel& c, bool pinned) {
  if (pinned == c.pin->pinned) return;
  if (pinned) {
    c.pin->pinned = cuda::pin(c.region->base(), c.region->size());
    c.pin->owner_pid = getpid();
  } else {
    cuda::unpin(c.region->base());
    c.pin->pinned = false;
  }
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::create_channel(int id, const ipc::RegionGeometry& geometry) {
  auto channel = std::make_unique<WorkerChannel>();
  channel->id = id;
  auto region = ipc::ShmRegion::create(geometry.total_bytes, config_.shm_dir,
                                       "mploader-worker-" + std::to_string(id));
  if (!region.ok() && out_of_descriptors(region.error())) {
    throw Error("mploader: creating worker " + std::to_string(id) + "'s ring: " +
                region.error().describe());  // not a lack of shared memory
  }
  if (!region.ok()) {
    const int64_t free_bytes =
        config_.shm_dir.empty() ? -1 : ipc::free_bytes_of_dir(config_.shm_dir);
    throw_shm_error(region.error(), geometry.total_bytes, config_, id, free_bytes);
  }
  std::shared_ptr<RegionPin> pin = channel->pin;
  channel->region = std::shared_ptr<ipc::ShmRegion>(
      new ipc::ShmRegion(region.take()), [pin](ipc::ShmRegion* r) {
        if (pin->pinned && pin->owner_pid == getpid()) cuda::unpin(r->base());
        delete r;
      });
  ipc::RegionView::initialize(channel->region->base(), geometry, id);
  channel->view = ipc::RegionView(channel->region->base());
  const std::string whose = " for worker " + std::to_string(id);
  channel->task_event = checked(ipc::EventFd::create(), "creating an eventfd" + whose);
  channel->done_event = checked(ipc::EventFd::create(), "creating an eventfd" + whose);
  channel->sockets = checked(ipc::make_socket_pair(), "creating a socket pair" + whose);
  channel->slots = std::make_shared<SlotPool>(channel->region, &channel->view.header().free_slots,
                                              config_.num_slots);
  channels_.push_back(std::move(channel));
}

void WorkerPool::start_worker(WorkerChannel& channel) {
  auto process = launch(channel);
  if (!process.ok()) {
    throw Error("mploader: could not start worker " + std::to_string(channel.id) + ": " +
                process.error().describe() +
                (out_of_descriptors(process.error())
                     ? "."
                     : ". Check the process limit (ulimit -u) and free memory, or use fewer "
                       "workers."));
  }
  channel.process = process.take();
  channel.sockets.child.reset();  // the worker has its copy
}

// Starts the worker's process by the configured start method, from the same spec for each.
ipc::Result<detail::WorkerProcess> WorkerPool::launch(WorkerChannel& channel) {
  const worker::WorkerSpec spec = worker_spec(channel);
  if (config_.start_method == StartMethod::kForkserver) {
    return detail::start_via_forkserver(spec, &channel.view.header().foreign_wait_status);
  }
  const int keep = channel.id;
  if (config_.start_method == StartMethod::kSpawn) {
    // Made here, not in the child: between fork and exec only the descriptor is touched.
    auto spec_fd = worker::spec_to_memfd(spec);
    if (!spec_fd.ok()) return spec_fd.error();
    const int spec_fd_number = spec_fd.value().get();
    return detail::fork_from_launcher([this, keep, spec, spec_fd_number] {
      drop_other_channels_in_child(keep);
      detail::exec_worker(spec, spec_fd_number);
      return worker::kSpawnFailedExit;  // exec failed
    });  // the parent's copy of the memfd closes here
  }
  // A forked worker keeps this process's dataset, collator and mapping, and can run
  // worker_init, which no other start method can carry.
  const worker::WorkerContext context{spec, channel.view, &dataset_, &collator_,
                                      config_.worker_init};
  return detail::fork_from_launcher([this, keep, context] {
    drop_other_channels_in_child(keep);
    return worker::run_worker(context);
  });
}

worker::WorkerSpec WorkerPool::worker_spec(const WorkerChannel& c) const {
  worker::WorkerSpec s;
  s.settings = config_.worker_settings;
  s.worker_id = c.id;
  s.worker_slots = config_.reported_worker_slots > 0 ? config_.reported_worker_slots
                                                     : config_.worker_slots;
  s.parent_pid = getpid();
  s.region_fd = c.region->fd();
  s.region_bytes = c.region->size();
  s.task_event_fd = c.task_event.fd();
  s.done_event_fd = c.done_event.fd();
  s.socket_fd = c.sockets.child.get();
  return s;
}

// In a new worker: release what belongs to the other workers, so that each worker holds only
// its own ring and descriptors.
void WorkerPool::drop_other_channels_in_child(int keep) {
  for (auto& c : channels_) {
    c->sockets.parent.reset();
    if (c->id == keep) continue;
    c->region->reset();
    c->task_event.reset();
    c->done_event.reset();
    c->sockets.child.reset();
    c->process.pidfd.reset();
  }
}

void WorkerPool::restart(size_t worker) {
  WorkerChannel& c = *channels_[worker];
  if (c.process.pid > 0 && !c.reaped) {
    kill(c.process.pid, SIGKILL);  // normally dead already; a hung one is not
    detail::reap(c.process);
  }
  c.process = detail::WorkerProcess{};  // closes its pidfd
  c.sockets.parent.reset();
  // A fresh socket: descriptors the dead worker sent but never published must not be read as
  // the new worker's.
  c.sockets = checked(ipc::make_socket_pair(),
                      "creating a socket pair for restarted worker " + std::to_string(worker));
  c.task_event.drain();
  c.done_event.drain();
  ipc::RegionHeader& h = c.view.header();
  h.stop.store(0);
  h.current_index.store(-1);
  h.phase.store(static_cast<uint32_t>(ipc::WorkerPhase::kStarting));
  h.crash.state.store(ipc::CrashRecord::kEmpty);
  h.stack_dump.state.store(ipc::CrashRecord::kEmpty);
  h.foreign_wait_status.store(-1);
  h.maps_bytes = 0;
  c.view.task_ring().init();
  c.view.done_ring().init();
  // The dead worker may have popped slots it never published: every slot no batch holds goes
  // back on the stack before the new worker can pop.
  c.slots->rebuild();
  c.reaped = false;
  set_pinned(c, false);
  start_worker(c);
  set_pinned(c, config_.pin_memory);
}

void WorkerPool::unpark(size_t worker) {
  WorkerChannel& c = *channels_[worker];
  if (!c.parked) return;
  c.parked = false;
  restart(worker);  // a parked channel's process is reaped: restart() only resets and starts
  workers_running_.fetch_add(1, std::memory_order_relaxed);
}

void WorkerPool::park(size_t worker) {
  WorkerChannel& c = *channels_[worker];
  if (c.parked) return;
  if (c.process.pid > 0 && !c.reaped) {
    c.view.header().stop.store(1, std::memory_order_release);
    (void)c.view.task_ring().try_push(ipc::kShutdownId);  // wakes it; it has no tasks
    c.task_event.notify();
    if (!detail::wait_exit(c.process, kStopGraceMs)) kill(c.process.pid, SIGKILL);
    detail::reap(c.process);
  }
  c.process = detail::WorkerProcess{};  // closes its pidfd
  c.reaped = true;
  c.parked = true;
  workers_running_.fetch_sub(1, std::memory_order_relaxed);
}

void WorkerPool::shutdown() {
  for (auto& c : channels_) {
    if (c->reaped || c->process.pid <= 0) continue;
    c->view.header().stop.store(1, std::memory_order_release);
    // The stop flag is what stops the worker; the id only wakes one that waits on an empty
    // ring. A full ring means a worker with tasks to run, which sees the flag between samples.
    (void)c->view.task_ring().try_push(ipc::kShutdownId);
    c->task_event.notify();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kStopGraceMs);
  for (auto& c : channels_) {
    if (c->reaped || c->process.pid <= 0) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!detail::wait_exit(c->process, static_cast<int>(std::max<int64_t>(0, left.count())))) {
      kill(c->process.pid, SIGKILL);
    }
    detail::reap(c->process);
    c->reaped = true;
    c->process.pidfd.reset();
    c->sockets.parent.reset();
    c->task_event.reset();
    c->done_event.reset();
    c->region->close_fd();  // the mapping stays while batches use it
  }
}

}  // namespace mploader::detail
