// The dispatcher's error paths: failed tasks, dead workers, and timeouts, each turned into a
// public exception that carries the evidence.
#include "loader/dispatcher.h"

#include "core/assembly.h"
#include "util/log.h"
#include "loader/messages.h"
#include "util/units.h"

#include <mploader/errors.h>

#include <algorithm>

namespace mploader::detail {

std::exception_ptr Dispatcher::error_for(size_t w, uint32_t id, const InFlightTask& f) {
  WorkerChannel& c = pool_.channel(w);
  const ipc::TaskDescriptor& d = c.view.descriptor(id);
  const std::string who = "mploader: worker " + std::to_string(w) + " (pid " +
                          std::to_string(c.process.pid) + ")";
  const BatchFailure failure = read_failure(d);
  switch (failure.status) {
    case ipc::TaskStatus::kDatasetError:
    case ipc::TaskStatus::kCollateError:
      return std::make_exception_ptr(batch_error(
          failure, FailurePlace{who, describe_batch(f.position), kBatchSkipped,
                                static_cast<int>(w)}));
    case ipc::TaskStatus::kTooLarge: {
      const uint64_t slot = c.view.header().slot_bytes;
      return std::make_exception_ptr(BatchTooLarge(
          who + ": " + describe_batch(f.position) + " needs " + human_bytes(d.batch_bytes) +
              " but a ring slot holds " + human_bytes(slot) +
              ". Raise max_batch_bytes to at least " + std::to_string(d.batch_bytes) +
              ", or set allow_overflow = true. " + kBatchSkipped,
          d.batch_bytes, slot));
    }
    default:
      return std::make_exception_ptr(Error(who + ": " + describe_batch(f.position) +
                                           " failed: " + failure.type + ": " + failure.message +
                                           ". " + kBatchSkipped));
  }
}

std::string Dispatcher::describe_batch(uint64_t position) const {
  if (position < batch_count()) {
    return batch_place(plan_sequence(position), epoch_, batches_->planned(position));
  }
  return "batch " + std::to_string(position) + " of epoch " + std::to_string(epoch_);
}

void Dispatcher::worker_died(size_t w) {
  std::shared_ptr<const DeathRecord> record = supervisor_.death_of(w);
  restart_or_fail(w, *record, /*hang=*/false);
}

// The worker owing the batch the loop waits for (in order), or any worker with work (out of
// order) is the one that hangs.
void Dispatcher::timed_out() {
  std::optional<size_t> owing;
  for (size_t w = 0; w < workers_.size() && !owing; ++w) {
    for (const auto& [id, f] : in_flight_.of(w)) {
      if (f.generation == generation_ && (!settings_.in_order || f.position == next_deliver_)) {
        owing = w;
        break;
      }
    }
  }
  if (!owing) {
    throw Error("mploader: waited " + std::to_string(settings_.timeout.count()) +
                " ms (timeout) for " + describe_batch(next_deliver_) +
                ", which no worker holds: a bug in mploader. Recreate the loader.");
  }
  std::shared_ptr<const DeathRecord> record =
      supervisor_.hang_of(*owing, static_cast<int64_t>(settings_.timeout.count()));
  restart_or_fail(*owing, *record, /*hang=*/true);
}

void Dispatcher::restart_or_fail(size_t w, const DeathRecord& record, bool hang) {
  if (record.quarantine && record.quarantine->leave_out()) {
    quarantine_and_restart(w, *record.quarantine);
    return;
  }
  if (restarts_this_epoch_ < settings_.max_restarts_per_epoch) {
    if (record.quarantine && record.quarantine->index >= 0) {
      ++restarts_by_sample_[record.quarantine->index];
    }
    restart_worker(w, /*counted=*/true);
    return;
  }
  std::string message = record.message;
  if (settings_.max_restarts_per_epoch > 0) {
    message += " The restart limit of this epoch (max_restarts_per_epoch = " +
               std::to_string(settings_.max_restarts_per_epoch) + ") is used up.";
  }
  message += " The loader cannot go on; recreate it.";
  broken_ = hang ? std::make_exception_ptr(TimeoutError(message, record.summary))
                 : std::make_exception_ptr(WorkerCrashed(message, record.summary));
  std::rethrow_exception(broken_);
}

// Replaces a dead worker. Its published results are taken first; what it still held is issued
// again, so no index is lost and none arrives twice.
void Dispatcher::restart_worker(size_t w, bool counted) {
  if (counted) ++restarts_this_epoch_;
  ++replacements_;
  receive_from(w);
  WorkerState& state = workers_[w];
  std::vector<uint64_t> again;
  // Their slot promises are dropped with them: pool_.restart rebuilds the free-slot stack
  // once the dead worker is reaped, slots it popped and never published included.
  for (const InFlightTask& f : in_flight_.take_all(w)) {
    if (f.generation == generation_) again.push_back(f.position);
  }
  std::sort(again.begin(), again.end());
  reissue_.insert(reissue_.end(), again.begin(), again.end());
  state.free_descriptors.clear();
  for (uint32_t id = pool_.config().num_descriptors; id > 0; --id) {
    state.free_descriptors.push_back(id - 1);
  }
  pool_.restart(w);
  supervisor_.worker_replaced(w);
  log().warn("mploader: restarted worker {} as pid {} ({} {} of at most {} this epoch); {} "
             "batch(es) it held are issued again",
             w, pool_.channel(w).process.pid,
             counted ? "restart" : "not counted: it died on a quarantined sample; restarts",
             restarts_this_epoch_, settings_.max_restarts_per_epoch, again.size());
}

// The death quarantined its sample, or was on a sample quarantined after its batch went out:
// the restarts this epoch spent on the sample are given back (a run with several bad samples
// does not use up max_restarts_per_epoch on them; max_quarantined_per_epoch bounds them
// instead), the worker is replaced, and the sample is left out of every batch not received.
void Dispatcher::quarantine_and_restart(size_t w, const QuarantineVerdict& v) {
  if (v.quarantined) {
    restarts_this_epoch_ -= restarts_by_sample_[v.index];
    restarts_by_sample_.erase(v.index);
    log().warn("mploader: sample {} quarantined after {} worker deaths on it "
               "(quarantine_after = {}): it is left out of its batch, which is issued again one "
               "sample shorter, and of every later batch; see Loader::stats().quarantined",
               v.index, v.deaths, quarantine_->settings().after);
  }
  restart_worker(w, /*counted=*/false);
  leave_out_everywhere(v.index);
}

// Batches handed out after this leave the sample out themselves (LeaveOutQuarantined reads the
// quarantine live); those handed out before and not yet received report it skipped here.
void Dispatcher::leave_out_everywhere(int64_t index) {
  const auto* filter = dynamic_cast<const LeaveOutQuarantined*>(batches_.get());
  if (filter == nullptr) return;
  auto check = [&](uint64_t from, uint64_t to) {  // positions not received: a few at most
    for (uint64_t p = from; p < std::min<uint64_t>(to, next_issue_); ++p) {
      const std::vector<int64_t> planned = batches_->planned(static_cast<size_t>(p));
      if (std::find(planned.begin(), planned.end(), index) != planned.end()) {
        filter->report(index);
      }
    }
  };
  uint64_t at = 0;
  received_.for_each_range([&](uint64_t begin, uint64_t end) {
    check(at, begin);
    at = end;
  });
  check(at, next_issue_);
}

}  // namespace mploader::detail
