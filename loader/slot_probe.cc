#include "loader/slot_probe.h"

#include "core/assembly.h"
#include "core/text_fields.h"
#include "loader/component_settings.h"
#include "process/wait_check.h"
#include "supervise/supervisor.h"
#include "util/log.h"
#include "util/units.h"

#include <mploader/errors.h>

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

namespace mploader::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kProbeDescriptor = 0;

// One worker, one descriptor for up to `probe_count` indices, and a one-page slot the probe
// never writes to: its answer is the descriptor itself.
PoolConfig probe_config(const PoolConfig& pool, uint32_t probe_count) {
  PoolConfig c = pool;  // its workers' settings too
  c.worker_slots = 1;
  c.workers_running = 1;
  c.reported_worker_slots = pool.worker_slots;  // the one process stands in for the pool
  c.num_descriptors = 1;
  c.num_slots = 1;
  c.max_indices = probe_count;
  c.slot_bytes = ipc::kPageBytes;
  c.pin_memory = false;
  return c;
}

void send_probe(WorkerChannel& c, InFlightTable& in_flight, uint32_t probe_count, size_t max_batch,
                uint64_t epoch) {
  ipc::TaskDescriptor& d = c.view.descriptor(kProbeDescriptor);
  d.sequence = 0;
  d.epoch = epoch;
  d.generation = 0;
  d.payload_slot = ipc::kNoSlot;  // a probe writes no payload and never pops a slot
  d.num_indices = probe_count;
  d.status = static_cast<uint32_t>(ipc::TaskStatus::kPending);
  d.kind = static_cast<uint32_t>(ipc::TaskKind::kProbe);
  d.probe_batch_size = static_cast<uint32_t>(max_batch);
  d.num_upcoming_shards = 0;
  std::vector<int64_t> indices(probe_count);
  for (uint32_t i = 0; i < probe_count; ++i) indices[i] = i;
  std::memcpy(c.view.indices(kProbeDescriptor), indices.data(), probe_count * sizeof(int64_t));
  in_flight.add(0, kProbeDescriptor,
                InFlightTask{0, 0, false, InFlightBatch{epoch, 0, std::move(indices)}});
  push_task(c, kProbeDescriptor);
}

const char* const kProbeDied =
    "mploader: the worker process that reads sample 0 to size the ring slots died, so the "
    "loader was not created (that read runs in a worker, never in the training process). ";
// When the dataset is fine but for the samples the probe reads, the user can skip the probe.
const char* const kSkipProbe =
    " If only these samples are bad, set LoaderOptions::max_batch_bytes to the bytes of the "
    "largest batch: then no sample is read to size the slots, and quarantine_after (with "
    "max_restarts_per_epoch) leaves bad samples out during the epoch.";

// How long the probe may spend reading its samples before the slots are sized without it. A
// dataset whose samples wait for one another (a barrier across workers) never answers a probe
// that is the only worker; bounded, the loader starts with slots of kUnprobedSlotBytes and
// batches larger than that travel in one-off segments.
constexpr auto kProbeReadLimit = std::chrono::seconds(10);
constexpr uint64_t kUnprobedSlotBytes = uint64_t{4} << 20;

// Whether the probe is past starting up and waiting for tasks: in dataset or collator code.
bool probe_reading(const WorkerChannel& c) {
  const auto phase = static_cast<ipc::WorkerPhase>(c.view.header().phase.load());
  return phase != ipc::WorkerPhase::kStarting && phase != ipc::WorkerPhase::kIdle;
}

// True when the probe has answered; false when it read for longer than kProbeReadLimit (and
// `may_give_up`); throws WorkerCrashed or TimeoutError when it died or overran
// LoaderOptions::timeout, and what the wait check throws.
bool await_probe(WorkerChannel& c, Supervisor& supervisor, const LoaderOptions& options,
                 bool may_give_up) {
  const bool has_timeout = options.timeout.count() > 0;
  const Clock::time_point deadline = has_timeout ? Clock::now() + options.timeout
                                                 : Clock::time_point::max();
  Clock::time_point reading_since = Clock::time_point::max();
  for (;;) {
    uint32_t id;
    if (c.view.done_ring().try_pop(id)) return true;
    int timeout_ms = !c.process.pidfd ? 100 : 1000;  // no pidfd: poll the status instead
    if (has_timeout) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      timeout_ms = std::min<int64_t>(timeout_ms, std::clamp<int64_t>(left.count() + 1, 0, 1 << 30));
    }
    pollfd fds[2] = {{c.done_event.fd(), POLLIN, 0}, {c.process.pidfd.get(), POLLIN, 0}};
    check_while_waiting();
    const int rc = poll(fds, 2, wait_slice_ms(timeout_ms));
    if (rc < 0 && errno != EINTR) throw Error(std::string("mploader: poll: ") + strerror(errno));
    c.done_event.drain();
    if (c.view.done_ring().try_pop(id)) return true;
    const bool exited = c.process.pidfd ? (fds[1].revents & POLLIN) != 0
                                        : detail::peek_exit(c.process).has_value();
    if (exited) {
      // Skipping the probe helps only when a sample killed it, not a worker that never started.
      const bool in_samples = reading_since != Clock::time_point::max() || probe_reading(c);
      auto record = supervisor.death_of(0);
      throw WorkerCrashed(kProbeDied + record->message + (in_samples ? kSkipProbe : ""),
                          record->summary);
    }
    if (has_timeout && Clock::now() >= deadline) {
      auto record = supervisor.hang_of(0, static_cast<int64_t>(options.timeout.count()));
      throw TimeoutError(kProbeDied + record->message, record->summary);
    }
    if (reading_since == Clock::time_point::max() && probe_reading(c)) reading_since = Clock::now();
    if (may_give_up && Clock::now() - reading_since >= kProbeReadLimit) return false;
  }
}

void warn_unprobed(size_t max_batch) {
  log().warn("mploader: the worker reading sample 0 to size the ring slots had no answer after "
             "{} s (samples that wait for other workers never answer a lone reader), so it was "
             "stopped and the slots hold {} each: a batch of {} samples larger than that "
             "travels in a one-off shared segment, which is slower. Set max_batch_bytes to the "
             "largest batch to size the slots without reading a sample.",
             std::chrono::seconds(kProbeReadLimit).count(), human_bytes(kUnprobedSlotBytes),
             max_batch);
}

// The probe's estimate, or the WorkerError its failure stands for.
uint64_t probe_result(const WorkerChannel& c, uint64_t epoch) {
  const ipc::TaskDescriptor& d = c.view.descriptor(kProbeDescriptor);
  const BatchFailure failure = read_failure(d);
  if (failure.ok()) return d.batch_bytes;
  const std::vector<int64_t> indices(c.view.indices(kProbeDescriptor),
                                     c.view.indices(kProbeDescriptor) + d.num_indices);
  const FailurePlace place{
      "mploader: sizing the ring slots (in worker process " + std::to_string(c.process.pid) +
          ", before the loader starts)",
      batch_place(0, epoch, indices),
      "Fix the dataset or the collator (num_workers = 0 runs them in this process, under a "
      "debugger); the loader was not created.",
      0};
  throw batch_error(failure, place);
}

// Warns when the probed text would have sized the slots for more text than they hold: one
// outsized sample 0 is the usual cause, and the user should know that batches like it take
// overflow segments, and how to size the slots for them instead.
void warn_of_capped_text(const ipc::TaskDescriptor& table, size_t max_batch,
                         const PoolConfig& pool) {
  const ProbedTexts texts = probed_texts(table);
  const TextSlotBytes text = estimate_text_bytes(texts, max_batch);
  if (text.wanted <= text.bytes) return;
  const auto longest = std::max_element(
      texts.fields.begin(), texts.fields.end(),
      [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string field = "text field '" + longest->first + "'";
  const std::string seen =
      texts.rows == 1 ? "sample 0's " + field + " is " + human_bytes(longest->second)
                      : "the first batch's " + field + " holds " +
                            human_bytes(longest->second / texts.rows) + " per sample";
  log().warn("mploader: {}; sizing ring slots for batches of {} such samples, with room to "
             "grow, would set aside {} of text in each of {} slots ({} per worker). Slots hold "
             "at most {} of text instead: a batch with more travels in a one-off shared "
             "segment, which is slower. If most samples are this long, set max_batch_bytes to "
             "the largest batch you expect.",
             seen, max_batch, human_bytes(text.wanted),
             static_cast<uint64_t>(pool.num_slots) * static_cast<uint64_t>(pool.worker_slots),
             pool.num_slots, human_bytes(text.bytes));
}

}  // namespace

uint64_t probe_slot_bytes(Dataset& dataset, const LoaderOptions& options,
                          const PoolConfig& pool_config) {
  if (options.max_batch_bytes > 0) return options.max_batch_bytes;
  const size_t n = dataset.size();
  if (n == 0) return ipc::kPageBytes;
  const size_t max_batch = options.batch_sampler->max_batch_size();
  const auto probe_count = static_cast<uint32_t>(std::min(n, max_batch));
  uint64_t estimate = 0;
  {
    // Destroyed in reverse: the supervisor stops watching before the pool's orderly shutdown.
    WorkerPool pool(dataset, *options.collate, probe_config(pool_config, probe_count));
    InFlightTable in_flight(1);
    std::optional<Supervisor> supervisor(std::in_place, pool, in_flight,
                                         supervisor_settings(options));
    send_probe(pool.channel(0), in_flight, probe_count, max_batch,
               pool_config.worker_settings.first_epoch);
    if (!await_probe(pool.channel(0), *supervisor, options,
                     pool_config.worker_settings.allow_overflow)) {
      supervisor.reset();  // a probe stopped on purpose is no death to report
      kill(pool.channel(0).process.pid, SIGKILL);  // waiting, it would not see a stop request
      warn_unprobed(max_batch);
      return kUnprobedSlotBytes;
    }
    estimate = probe_result(pool.channel(0), pool_config.worker_settings.first_epoch);
    warn_of_capped_text(pool.channel(0).view.descriptor(kProbeDescriptor), max_batch,
                        pool_config);
  }
  return estimate + estimate / 4 + ipc::kPageBytes;
}

}  // namespace mploader::detail
