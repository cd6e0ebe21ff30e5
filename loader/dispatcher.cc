#include "loader/dispatcher.h"

#include "core/batch_builder.h"
#include "util/log.h"
#include "loader/messages.h"
#include "loader/overflow_memory.h"
#include "process/wait_check.h"

#include <mploader/errors.h>

#include <poll.h>

#include <algorithm>
#include <cstring>

namespace mploader::detail {
namespace {

using Clock = std::chrono::steady_clock;

int64_t nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// Returns a payload slot to its worker's free-slot stack when the last tensor viewing it is
// destroyed (any thread): the worker's next batch goes into it while it is still in cache.
class SlotLease {
 public:
  SlotLease(std::shared_ptr<ipc::ShmRegion> region, std::shared_ptr<SlotPool> pool, uint32_t slot)
      : region_(std::move(region)), pool_(std::move(pool)), slot_(slot) {}
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  ~SlotLease() { pool_->release(slot_); }

 private:
  std::shared_ptr<ipc::ShmRegion> region_;  // keeps the mapping alive
  std::shared_ptr<SlotPool> pool_;
  uint32_t slot_;
};

}  // namespace

Dispatcher::Dispatcher(WorkerPool& pool, const DispatcherSettings& settings,
                       int64_t prefetch_factor, const SupervisorSettings& supervision,
                       DispatcherNotices& notices, std::shared_ptr<SkipLedger> skips)
    : pool_(pool), settings_(settings), in_flight_(pool.size()),
      supervisor_(pool, in_flight_, supervision), notices_(notices), workers_(pool.size()),
      prefetch_factor_(prefetch_factor), quarantine_(supervision.quarantine),
      skips_(std::move(skips)) {
  refresh_issuable();
  for (WorkerState& w : workers_) {
    for (uint32_t id = pool.config().num_descriptors; id > 0; --id) {
      w.free_descriptors.push_back(id - 1);
    }
  }
}

void Dispatcher::start_epoch(std::shared_ptr<const BatchList> batches, uint64_t epoch) {
  if (broken_) std::rethrow_exception(broken_);
  ++generation_;
  for (size_t w = 0; w < pool_.size(); ++w) {
    pool_.channel(w).view.header().cancel_generation.store(generation_,
                                                          std::memory_order_release);
  }
  reorder_.clear();
  unordered_.clear();
  batches_ = std::move(batches);
  streamed_ = batches_->size() > 0 && batches_->stream(0) >= 0;
  epoch_ = epoch;
  next_issue_ = 0;
  next_deliver_ = 0;
  reissue_.clear();
  restarts_this_epoch_ = 0;
  restarts_by_sample_.clear();
  received_.assign(batches_->size());
  if (quarantine_) quarantine_->start_epoch(epoch);
  supervisor_.epoch_started(epoch);
}

void Dispatcher::refresh_issuable() {
  issuable_.clear();
  for (size_t w = 0; w < pool_.size(); ++w) {
    if (!pool_.channel(w).parked && w != removing_) issuable_.push_back(w);
  }
}

bool Dispatcher::add_worker() {
  if (removing_) {  // still running: it takes tasks again
    removing_.reset();
    refresh_issuable();
    return true;
  }
  for (size_t w = 0; w < pool_.size(); ++w) {
    if (!pool_.channel(w).parked) continue;
    pool_.unpark(w);
    supervisor_.worker_started(w);
    refresh_issuable();
    return true;
  }
  return false;
}

bool Dispatcher::remove_worker() {
  if (removing_ || issuable_.size() <= 1) return false;
  removing_ = issuable_.back();
  refresh_issuable();
  settle_removal();
  return true;
}

void Dispatcher::settle_removal() {
  if (!removing_ || in_flight_.count(*removing_) != 0) return;
  supervisor_.worker_parking(*removing_);
  pool_.park(*removing_);
  removing_.reset();
}

void Dispatcher::set_prefetch_factor(int64_t prefetch_factor) {
  prefetch_factor_ = std::clamp<int64_t>(prefetch_factor, 1, pool_.config().num_descriptors);
}

void Dispatcher::add_memory(LoaderStats& stats) const {
  for (size_t w = 0; w < pool_.size() && w < stats.workers.size(); ++w) {
    stats.workers[w].memory = supervisor_.memory_of(w);
  }
  stats.memory_growth_warnings += supervisor_.memory_growth_warnings();
}

std::optional<Batch> Dispatcher::next() {
  if (broken_) std::rethrow_exception(broken_);
  if (next_deliver_ >= batch_count()) return std::nullopt;
  auto fresh_deadline = [this] {
    return settings_.timeout.count() > 0 ? Clock::now() + settings_.timeout
                                        : Clock::time_point::max();
  };
  auto deadline = fresh_deadline();
  for (;;) {
    issue_tasks();
    if (std::optional<Ready> ready = take_ready()) {
      ++next_deliver_;
      if (ready->error) std::rethrow_exception(ready->error);
      if (ready->batch) return std::move(ready->batch);
      if (next_deliver_ >= batch_count()) return std::nullopt;  // the last was left empty
      continue;
    }
    const uint64_t replacements = replacements_;
    const bool blocked = !reorder_.empty();  // later batches ready, the one due is not
    const Clock::time_point wait_start = blocked ? Clock::now() : Clock::time_point{};
    check_while_waiting();  // before the wait: what it throws leaves every task as it was
    wait_for_results(deadline);
    if (blocked) head_of_line_ns_ += static_cast<uint64_t>(nanos(Clock::now() - wait_start));
    if (replacements_ != replacements) deadline = fresh_deadline();  // a new worker's time
  }
}

std::optional<Dispatcher::Ready> Dispatcher::take_ready() {
  if (settings_.in_order) {
    auto it = reorder_.find(next_deliver_);
    if (it == reorder_.end()) return std::nullopt;
    Ready r = std::move(it->second);
    reorder_.erase(it);
    return r;
  }
  if (unordered_.empty()) return std::nullopt;
  Ready r = std::move(unordered_.front());
  unordered_.pop_front();
  return r;
}

// The next batch to hand out: one a dead worker left behind, else the next in order within a
// window of batches ahead of the training loop (so that a slow worker cannot make the reorder
// buffer grow without bound).
std::optional<uint64_t> Dispatcher::next_to_issue() const {
  if (!reissue_.empty()) return reissue_.front();
  const size_t window = issuable_.size() * static_cast<size_t>(prefetch_factor_);
  if (next_issue_ < batch_count() && next_issue_ < next_deliver_ + window) return next_issue_;
  return std::nullopt;
}

// Keeps every worker busy up to prefetch_factor tasks.
void Dispatcher::issue_tasks() {
  while (std::optional<uint64_t> sequence = next_to_issue()) {
    const std::vector<int64_t> indices = batches_->indices(*sequence);
    if (indices.empty()) {
      settle_empty(*sequence);
      continue;
    }
    if (issue_one(*sequence, indices, /*require_slot=*/true)) continue;
    // No worker has a free slot: the training loop holds them. Only when the loop would
    // otherwise wait forever does a batch go out without one (into an overflow segment).
    size_t in_flight = 0;
    for (size_t w = 0; w < workers_.size(); ++w) in_flight += in_flight_.count(w);
    const bool must = settings_.in_order ? *sequence == next_deliver_
                                        : in_flight == 0 && unordered_.empty();
    if (!must || !issue_one(*sequence, indices, /*require_slot=*/false)) return;
  }
}

// Gives batch `sequence` to the least-loaded worker that can take it, or to its stream's
// worker only.
bool Dispatcher::issue_one(uint64_t sequence, const std::vector<int64_t>& indices,
                           bool require_slot) {
  const size_t most_in_flight = static_cast<size_t>(prefetch_factor_);
  std::vector<size_t> order;
  if (streamed_) {
    order.push_back(issuable_[static_cast<size_t>(batches_->stream(sequence)) % issuable_.size()]);
  } else {
    order.resize(issuable_.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = issuable_[(next_worker_hint_ + i) % order.size()];
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return in_flight_.count(a) < in_flight_.count(b);
    });
  }
  for (size_t w : order) {
    WorkerState& state = workers_[w];
    if (in_flight_.count(w) >= most_in_flight || state.free_descriptors.empty()) continue;
    // A promise, not a slot: the worker pops the slot freed last when it starts the batch.
    const bool promised = pool_.channel(w).slots->reserve();
    if (!promised && require_slot) continue;
    if (!promised && !state.warned_overflow) {
      state.warned_overflow = true;
      log().warn(messages::overflow_warning(static_cast<int>(w), plan_sequence(sequence)));
    }
    send_task(w, promised, sequence, indices);
    ++next_worker_hint_;
    return true;
  }
  return false;
}

void Dispatcher::send_task(size_t w, bool slot_promised, uint64_t sequence,
                           const std::vector<int64_t>& indices) {
  WorkerState& state = workers_[w];
  WorkerChannel& channel = pool_.channel(w);
  const uint32_t id = state.free_descriptors.back();
  state.free_descriptors.pop_back();
  ipc::TaskDescriptor& d = channel.view.descriptor(id);
  d.sequence = plan_sequence(sequence);
  d.epoch = epoch_;
  d.generation = generation_;
  d.payload_slot = slot_promised ? ipc::kSlotAtStart : ipc::kNoSlot;
  d.num_indices = static_cast<uint32_t>(indices.size());
  d.status = static_cast<uint32_t>(ipc::TaskStatus::kPending);
  d.kind = static_cast<uint32_t>(ipc::TaskKind::kBatch);
  d.num_upcoming_shards =
      prefetch_plan_ ? static_cast<uint32_t>(prefetch_plan_->upcoming_shards(
                           d.sequence, d.upcoming_shards, ipc::kMaxUpcomingShards))
                     : 0;
  std::memcpy(channel.view.indices(id), indices.data(), indices.size() * sizeof(int64_t));
  in_flight_.add(w, id, InFlightTask{generation_, sequence, slot_promised,
                                     InFlightBatch{epoch_, plan_sequence(sequence), indices}});
  push_task(channel, id);
  mark_issued(sequence);
}

void Dispatcher::mark_issued(uint64_t sequence) {
  if (!reissue_.empty() && reissue_.front() == sequence) {
    reissue_.pop_front();
  } else {
    ++next_issue_;
  }
}

void Dispatcher::settle_empty(uint64_t sequence) {
  mark_issued(sequence);
  received_.insert(sequence);
  if (settings_.in_order) {
    reorder_[sequence] = Ready{};
  } else {
    unordered_.push_back(Ready{});
  }
}

void Dispatcher::wait_for_results(Clock::time_point deadline) {
  std::vector<pollfd> fds;
  std::vector<size_t> running;  // a parked slot has no process and no task to receive
  bool missing_pidfd = false;
  for (size_t w = 0; w < pool_.size(); ++w) {
    WorkerChannel& c = pool_.channel(w);
    if (c.parked) continue;
    running.push_back(w);
    fds.push_back({c.done_event.fd(), POLLIN, 0});
    fds.push_back({c.process.pidfd.get(), POLLIN, 0});  // a negative fd is ignored by poll
    missing_pidfd |= !c.parked && !c.process.pidfd;
  }
  int timeout_ms = -1;
  if (deadline != Clock::time_point::max()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 1 << 30));
  }
  if (missing_pidfd && (timeout_ms < 0 || timeout_ms > 100)) timeout_ms = 100;
  int rc = poll(fds.data(), fds.size(), wait_slice_ms(timeout_ms));
  if (rc < 0 && errno != EINTR) throw Error(std::string("mploader: poll: ") + strerror(errno));
  for (size_t w : running) receive_from(w);
  for (size_t i = 0; i < running.size(); ++i) {
    const size_t w = running[i];
    const detail::WorkerProcess& p = pool_.channel(w).process;
    const bool exited = p.pidfd ? (fds[2 * i + 1].revents & POLLIN) != 0
                                : detail::peek_exit(p).has_value();
    if (exited) worker_died(w);
  }
  if (rc == 0 && Clock::now() >= deadline) timed_out();
  settle_removal();
}

void Dispatcher::receive_from(size_t w) {
  WorkerChannel& c = pool_.channel(w);
  c.done_event.drain();
  uint32_t id;
  while (c.view.done_ring().try_pop(id)) handle_result(w, id);
}

void Dispatcher::handle_result(size_t w, uint32_t id) {
  std::optional<InFlightTask> task = in_flight_.take(w, id);
  if (!task) {
    broken_ = std::make_exception_ptr(Error(messages::corrupt_ring(static_cast<int>(w), id)));
    std::rethrow_exception(broken_);
  }
  const InFlightTask& f = *task;
  workers_[w].free_descriptors.push_back(id);
  const ipc::TaskDescriptor& d = pool_.channel(w).view.descriptor(id);
  const bool current = f.generation == generation_;
  Ready ready;
  if (d.status == static_cast<uint32_t>(ipc::TaskStatus::kOk)) {
    ready.batch = build_batch(w, f, id);  // builds even when stale, to consume an overflow fd
  } else {
    settle_unused_slot(w, f, id);
    ready.error = error_for(w, id, f);
  }
  if (!current) return;  // an abandoned epoch: dropping it returns its slot
  received_.insert(f.position);
  if (settings_.in_order) {
    reorder_[f.position] = std::move(ready);
  } else {
    unordered_.push_back(std::move(ready));
  }
}

std::optional<Batch> Dispatcher::build_batch(size_t w, const InFlightTask& f, uint32_t id) {
  WorkerChannel& c = pool_.channel(w);
  const ipc::TaskDescriptor& d = c.view.descriptor(id);
  std::vector<int64_t> indices(c.view.indices(id), c.view.indices(id) + d.num_indices);
  if (d.payload_slot >= 0) {
    const uint32_t slot = adopt_popped_slot(w, f, id);
    auto lease = std::make_shared<SlotLease>(c.region, c.slots, slot);
    return BatchBuilder::from_table(d, c.view.slot(slot),
                                    c.view.header().slot_bytes, lease, std::move(indices),
                                    static_cast<int>(w));
  }
  return build_overflow_batch(w, f, id, std::move(indices));
}

// The slot the worker popped for task `id`, now leased to its batch. A slot it cannot have
// popped means the shared memory is corrupt: the loader is broken, not the process.
uint32_t Dispatcher::adopt_popped_slot(size_t w, const InFlightTask& f, uint32_t id) {
  SlotPool& slots = *pool_.channel(w).slots;
  const int32_t slot = pool_.channel(w).view.descriptor(id).payload_slot;
  if (slot < 0 || !f.slot_promised || !slots.adopt(static_cast<uint32_t>(slot))) {
    broken_ = std::make_exception_ptr(
        Error(messages::corrupt_slot(static_cast<int>(w), id, slot, slots.num_slots())));
    std::rethrow_exception(broken_);
  }
  return static_cast<uint32_t>(slot);
}

// A task that made no batch: a slot its worker popped goes back on the stack, a promise it did
// not use is given back.
void Dispatcher::settle_unused_slot(size_t w, const InFlightTask& f, uint32_t id) {
  SlotPool& slots = *pool_.channel(w).slots;
  if (pool_.channel(w).view.descriptor(id).payload_slot >= 0) {
    slots.release(adopt_popped_slot(w, f, id));
  } else if (f.slot_promised) {
    slots.unreserve();
  }
}

Batch Dispatcher::build_overflow_batch(size_t w, const InFlightTask& f, uint32_t id,
                                       std::vector<int64_t> indices) {
  WorkerChannel& c = pool_.channel(w);
  const ipc::TaskDescriptor& d = c.view.descriptor(id);
  if (f.slot_promised) {  // it was promised a slot and did not fit
    c.slots->unreserve();
    if (!notices_.batch_too_large) {
      notices_.batch_too_large = true;
      log().warn(messages::batch_larger_than_slot(static_cast<int>(w), d.sequence, d.batch_bytes,
                                                  c.view.header().slot_bytes,
                                                  settings_.max_batch_bytes));
    }
  }
  auto received = ipc::receive_fd(c.sockets.parent.get());
  if (!received.ok() || received.value().tag != id) {  // a wrong one closes with `received`
    throw Error(messages::overflow_receive_failed(
        static_cast<int>(w), received.ok() ? "descriptor tag mismatch"
                                           : received.error().describe()));
  }
  const uint64_t bytes = std::max<uint64_t>(d.batch_bytes, 1);
  OverflowMemory memory =
      take_overflow_segment(std::move(received.value().fd), bytes, static_cast<int>(w));
  if (memory.copied && !notices_.copying_overflow) {
    notices_.copying_overflow = true;
    log().warn(messages::overflow_copying(live_overflow_segments(), live_overflow_bytes(),
                                          mappings_now(), max_map_count()));
  }
  return BatchBuilder::from_table(d, memory.base, bytes, std::move(memory.owner),
                                  std::move(indices), static_cast<int>(w));
}

}  // namespace mploader::detail
