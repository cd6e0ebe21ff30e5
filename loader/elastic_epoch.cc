#include "loader/elastic_epoch.h"

#include "sampler/elastic_plan.h"
#include "sampler/stream_mix_plan.h"
#include "util/fnv1a.h"
#include "util/log.h"

#include <mploader/errors.h>
#include <mploader/streaming.h>

#include <string>

namespace mploader::detail {
namespace {

[[noreturn]] void refuse_job(const std::string& what) {
  throw OptionError("state", "mploader: cannot resume the job state: " + what);
}

// Positions of `order` not in `delivered`: one list (batches cut anywhere), or one per group.
std::vector<std::vector<int64_t>> remaining_groups(const GlobalOrder& order,
                                                   const SequenceSet& delivered) {
  std::vector<std::vector<int64_t>> groups;
  const int64_t size = static_cast<int64_t>(order.indices.size());
  std::vector<int64_t> ends = order.group_ends;
  if (ends.empty()) ends.push_back(size);
  int64_t begin = 0;
  for (int64_t end : ends) {
    std::vector<int64_t> group;
    for (int64_t p = begin; p < std::min(end, size); ++p) {
      if (!delivered.contains(static_cast<uint64_t>(p))) group.push_back(p);
    }
    if (!group.empty()) groups.push_back(std::move(group));
    begin = end;
  }
  return groups;
}

void describe_resume(const JobState& job, int64_t world, int64_t rank, size_t steps,
                     const ResumedBatches& r) {
  std::string evened;
  auto add = [&evened](size_t n, const char* what) {
    if (n > 0) evened += (evened.empty() ? "; on this rank " : ", ") + std::to_string(n) + what;
  };
  add(r.split, " batch(es) split in two");
  add(r.padded, " repeated");
  add(r.dropped, " left out");
  log().info("mploader: epoch {} resumes a job state of {} ranks on {} (this is rank {}): {} of "
             "its {} samples were delivered, {} remain; {} steps on every rank{}",
             job.epoch, job.world_size, world, rank, job.delivered.count(), job.positions,
             job.positions - job.delivered.count(), steps, evened);
}

}  // namespace

ElasticEpochs::ElasticEpochs(const ElasticSampler* map, StreamSampler* stream,
                             const Dataset& dataset)
    : map_(map), stream_(stream), dataset_(dataset) {}

int64_t ElasticEpochs::world_size() const {
  return stream_ ? stream_->settings().world_size : map_->world_size();
}

int64_t ElasticEpochs::rank() const { return stream_ ? stream_->settings().rank : map_->rank(); }

uint64_t ElasticEpochs::order() const {
  Fnv1a h;
  if (stream_) {
    h.add(std::string("stream"));
    h.add(stream_->dataset().corpus_fingerprint());
    h.add(static_cast<uint64_t>(stream_->settings().shuffle));
    h.add(stream_->settings().seed);
    if (const StreamMixSpec* mix = stream_->dataset().stream_mix()) {
      h.add(stream_mix_fingerprint(*mix));
    }
  } else {
    h.add(std::string("map"));
    h.add(static_cast<uint64_t>(dataset_.size()));
    h.add(map_->order_fingerprint());
  }
  return h.value();
}

void ElasticEpochs::check_job(const JobState& job, const RecordedSettings& now) const {
  if (stream_ && !enabled()) {
    refuse_job("this Loader's StreamMixture starts its sources again when they run out "
               "(MixtureEnd::kCycle or kAllExhausted), so its epochs repeat samples, which a "
               "job state cannot record. Resume such a mixture on the same world size, with "
               "each rank's own state, or mix with MixtureEnd::kFirstExhausted");
  }
  if (!enabled()) {
    refuse_job("this Loader cannot resume on another world size: give it a StreamingDataset, "
               "or a DistributedSampler or DistributedBucketSampler (an ElasticSampler)");
  }
  if (job.order == order() && job.positions == positions()) return;
  std::string differs;
  auto note = [&differs](const std::string& name, const std::string& then,
                         const std::string& is) {
    if (then == is) return;
    differs += (differs.empty() ? "" : ", ") + name + " " + then + " then, " + is + " now";
  };
  note("samples", std::to_string(job.positions), std::to_string(positions()));
  note("seed", std::to_string(job.settings.seed), std::to_string(now.seed));
  note("shuffle", job.settings.shuffle ? "true" : "false", now.shuffle ? "true" : "false");
  if (differs.empty()) {
    differs = stream_ ? "the same sample count, seed and shuffle, but the shards' names or "
                        "counts differ"
                      : "the same sample count, and the Loader's seed and shuffle, but the "
                        "sampler's own options differ (its seed, shuffle, drop_last, lengths "
                        "or budgets)";
  }
  refuse_job("it was saved over other data or with other options that change the epoch's "
             "order (" + differs + "). Build the Loader over the same data with the same seed, "
             "shuffle and sampler options, or start the epoch afresh without it.");
}

void ElasticEpochs::prepare(const JobState& job) {
  if (stream_) stream_->resume(job.epoch, std::make_shared<SequenceSet>(job.delivered));
}

ElasticEpochs::MapRest ElasticEpochs::map_rest(const JobState& job, int64_t batch_size,
                                               bool drop_last) const {
  const GlobalOrder order = map_->global_order(dataset_.size(), job.epoch);
  if (order.indices.size() != job.positions) {
    refuse_job("the sampler's order of epoch " + std::to_string(job.epoch) + " holds " +
               std::to_string(order.indices.size()) + " samples and the job state " +
               std::to_string(job.positions) + "; build the Loader as the job was built");
  }
  const std::vector<std::vector<int64_t>> groups = remaining_groups(order, job.delivered);
  const uint64_t left = job.positions - job.delivered.count();
  if (left > 0 && left < static_cast<uint64_t>(world_size())) {
    refuse_job(std::to_string(left) + " samples of epoch " + std::to_string(job.epoch) +
               " remain, fewer than the " + std::to_string(world_size()) + " ranks resuming it; "
               "resume on at most " + std::to_string(left) + " ranks, or start epoch " +
               std::to_string(job.epoch + 1) + " with set_epoch()");
  }
  MapRest rest;
  rest.report = order.group_ends.empty()
                    ? resume_by_samples(groups.empty() ? std::vector<int64_t>{} : groups[0],
                                        world_size(), rank(), batch_size, drop_last)
                    : resume_by_groups(groups, world_size(), rank());
  for (const std::vector<int64_t>& positions : rest.report.batches) {
    rest.batch_start.push_back(rest.rank_positions.size());
    std::vector<int64_t>& batch = rest.batches.emplace_back();
    for (int64_t p : positions) {
      rest.rank_positions.push_back(p);
      batch.push_back(order.indices[static_cast<size_t>(p)]);
    }
  }
  rest.batch_start.push_back(rest.rank_positions.size());
  rest.report.batches.clear();
  return rest;
}

void ElasticEpochs::started_fresh(uint64_t epoch,
                                  const std::vector<std::vector<int64_t>>& batches,
                                  int64_t batch_size, bool drop_last) {
  base_ = 0;
  base_delivered_.reset();
  if (!map_) return;
  rank_positions_ = map_->rank_positions(dataset_.size(), epoch);
  batch_start_.clear();
  uint64_t at = 0;
  for (const std::vector<int64_t>& b : batches) {
    batch_start_.push_back(at);
    at += b.size();
  }
  batch_start_.push_back(at);
  // The Loader's drop_last cut the sampler's last, short batch: its batches are the first `at`
  // of the sampler's positions, in order.
  if (drop_last && at < rank_positions_.size() &&
      rank_positions_.size() - at < static_cast<uint64_t>(batch_size)) {
    rank_positions_.resize(at);
  }
  positions_known_ = at == rank_positions_.size();
  if (!positions_known_) {
    log().warn("mploader: the sampler's rank_positions() gives {} positions for epoch {} and its "
               "batches hold {} samples; this epoch's states cannot resume on another world "
               "size (ElasticSampler must describe the batches it makes)",
               rank_positions_.size(), epoch, at);
  }
}

void ElasticEpochs::started_resumed(const JobState& job, MapRest* rest,
                                    const StreamEpoch* stream) {
  base_ = job.id;
  base_delivered_ = std::make_shared<SequenceSet>(job.delivered);
  if (rest != nullptr) {
    rank_positions_ = std::move(rest->rank_positions);
    batch_start_ = std::move(rest->batch_start);
    positions_known_ = true;
    describe_resume(job, world_size(), rank(), rest->batches.size(), rest->report);
    return;
  }
  describe_resume(job, world_size(), rank(), stream->size(),
                  ResumedBatches{{}, stream->fewest_batches, stream->most_batches,
                                 stream->split_batches, stream->padded_batches,
                                 stream->dropped_batches});
}

void ElasticEpochs::forget_job() {
  if (stream_) stream_->clear_resume();
}

std::optional<ElasticProgress> ElasticEpochs::running(const StreamEpoch* stream,
                                                     const SequenceSet& delivered) const {
  if (!enabled() || (!stream_ && !positions_known_)) return std::nullopt;
  ElasticProgress e = upcoming(nullptr);
  e.base = base_;
  if (base_delivered_) e.delivered = *base_delivered_;
  e.steps = delivered.count();
  if (stream != nullptr) {  // positions are global indices: runs of them at once
    stream->for_each_delivered(delivered, [&e](size_t, int64_t begin, int64_t end) {
      e.delivered.insert_range(static_cast<uint64_t>(begin), static_cast<uint64_t>(end));
    });
    return e;
  }
  delivered.for_each_range([&](uint64_t begin, uint64_t end) {
    for (uint64_t s = begin; s < end; ++s) {
      if (s + 1 < batch_start_.size()) {
        for (uint64_t i = batch_start_[s]; i < batch_start_[s + 1]; ++i) {
          e.delivered.insert(static_cast<uint64_t>(rank_positions_[i]));
        }
      }
    }
  });
  return e;
}

ElasticProgress ElasticEpochs::upcoming(const JobState* job) const {
  ElasticProgress e;
  e.order = order();
  e.positions = positions();
  e.world_size = world_size();
  e.rank = rank();
  e.delivered.assign(e.positions);
  if (job != nullptr) {
    e.base = job->id;
    e.delivered = job->delivered;
  }
  return e;
}

}  // namespace mploader::detail
