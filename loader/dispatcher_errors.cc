// The dispatcher's error paths: failed tasks, dead workers, and timeouts, each turned into a
// public exception that carries the evidence.
#include "loader/dispatcher.h"
#include "loader/messages.h"
#include "loader/units.h"

#include <mploader/errors.h>

namespace mploader::detail {

std::exception_ptr Dispatcher::error_for(size_t w, uint32_t id, const InFlight& f) {
  WorkerChannel& c = pool_.channel(w);
  const ipc::TaskDescriptor& d = c.view.descriptor(id);
  const std::string who = "mploader: worker " + std::to_string(w) + " (pid " +
                          std::to_string(c.process.pid) + ")";
  const std::string type(d.error_type, strnlen(d.error_type, sizeof d.error_type));
  const std::string text(d.error_message, strnlen(d.error_message, sizeof d.error_message));
  const std::string skipped = ". The batch is skipped; catch the exception to go on with the "
                              "next batch.";
  switch (static_cast<ipc::TaskStatus>(d.status)) {
    case ipc::TaskStatus::kDatasetError:
      return std::make_exception_ptr(WorkerError(
          who + ": Dataset::get(" + std::to_string(d.failed_index) + ") threw " + type + ": " +
              text + " [" + describe_batch(f.sequence) + "]" + skipped,
          static_cast<int>(w), d.failed_index, type, text));
    case ipc::TaskStatus::kCollateError:
      return std::make_exception_ptr(WorkerError(
          who + ": collating " + describe_batch(f.sequence) + " failed: " + type + ": " + text +
              skipped,
          static_cast<int>(w), -1, type, text));
    case ipc::TaskStatus::kTooLarge: {
      const uint64_t slot = c.view.header().slot_bytes;
      return std::make_exception_ptr(BatchTooLarge(
          who + ": " + describe_batch(f.sequence) + " needs " + human_bytes(d.batch_bytes) +
              " but a ring slot holds " + human_bytes(slot) +
              ". Raise max_batch_bytes to at least " + std::to_string(d.batch_bytes) +
              ", or set allow_overflow = true" + skipped,
          d.batch_bytes, slot));
    }
    default:
      return std::make_exception_ptr(Error(who + ": " + describe_batch(f.sequence) +
                                           " failed: " + type + ": " + text + skipped));
  }
}

std::string Dispatcher::describe_batch(uint64_t sequence) const {
  std::string s = "batch " + std::to_string(sequence) + " of epoch " + std::to_string(epoch_);
  if (sequence < batches_.size()) s += ", indices " + messages::index_list(batches_[sequence]);
  return s;
}

void Dispatcher::worker_died(size_t w) {
  WorkerChannel& c = pool_.channel(w);
  const worker::ExitStatus status = worker::peek_exit(c.process.pid).value_or(worker::ExitStatus{});
  std::vector<int64_t> in_flight;
  std::string batches;
  for (const auto& [id, f] : workers_[w].in_flight) {
    if (f.generation != generation_) continue;
    const auto& b = batches_[f.sequence];
    in_flight.insert(in_flight.end(), b.begin(), b.end());
    batches += (batches.empty() ? "" : ", ") + std::to_string(f.sequence);
  }
  const int64_t loading = c.view.header().current_index.load();
  std::string msg = "mploader: worker " + std::to_string(w) + " (pid " +
                    std::to_string(c.process.pid) + ") " + status.describe();
  if (in_flight.empty()) {
    msg += " while idle.";
  } else {
    msg += " while loading batch(es) " + batches + " of epoch " + std::to_string(epoch_) +
           ", indices " + messages::index_list(in_flight) +
           (loading >= 0 ? "; it was in Dataset::get(" + std::to_string(loading) + ")" : "") +
           ".";
  }
  msg += " " + messages::death_hint(status) + " The loader cannot go on; recreate it.";
  broken_ = std::make_exception_ptr(WorkerCrashed(msg, static_cast<int>(w), c.process.pid,
                                                  status.signal, status.exit_code, in_flight));
  std::rethrow_exception(broken_);
}

void Dispatcher::timed_out() {
  std::string msg = "mploader: no batch arrived within " +
                    std::to_string(options_.timeout.count()) + " ms (timeout).";
  for (size_t w = 0; w < workers_.size(); ++w) {
    for (const auto& [id, f] : workers_[w].in_flight) {
      if (f.generation != generation_ || (options_.in_order && f.sequence != next_deliver_)) {
        continue;
      }
      const auto& h = pool_.channel(w).view.header();
      const int64_t loading = h.current_index.load();
      msg += " Waiting for " + describe_batch(f.sequence) + " from worker " + std::to_string(w) +
             " (pid " + std::to_string(pool_.channel(w).process.pid) + "), which has finished " +
             std::to_string(h.tasks_done.load()) + " tasks" +
             (loading >= 0 ? " and is in Dataset::get(" + std::to_string(loading) + ")" : "") +
             ".";
      break;
    }
  }
  msg += " Raise timeout if samples are slow to load, or look for a stuck dataset call.";
  throw TimeoutError(msg);
}

}  // namespace mploader::detail
