#include "loader/epoch_state.h"

#include "util/log.h"

#include <mploader/errors.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

namespace mploader::detail {
namespace {

void check_batches(const std::vector<std::vector<int64_t>>& batches, size_t dataset_size,
                   size_t max_batch) {
  for (size_t b = 0; b < batches.size(); ++b) {
    if (batches[b].empty() || batches[b].size() > max_batch) {
      throw OptionError("batch_sampler",
                        "mploader: the batch sampler returned batch " + std::to_string(b) +
                            " with " + std::to_string(batches[b].size()) +
                            " indices; batches must hold 1 to max_batch_size() = " +
                            std::to_string(max_batch));
    }
    for (int64_t index : batches[b]) {
      if (index < 0 || static_cast<size_t>(index) >= dataset_size) {
        throw OptionError("sampler", "mploader: the sampler produced index " +
                                         std::to_string(index) + " for a dataset of " +
                                         std::to_string(dataset_size) + " samples");
      }
    }
  }
}

// Says once per epoch how far apart the ranks' batch counts were and what evened them out:
// both change what a rank reads, and a user counting samples should not have to guess why.
void describe_stream_epoch(const StreamEpoch& plan, const StreamPlanSettings& s, uint64_t epoch) {
  std::string evened;
  auto add = [&evened](size_t n, const char* what) {
    if (n > 0) evened += (evened.empty() ? "; " : ", ") + std::to_string(n) + what;
  };
  add(plan.padded_batches, " repeated");
  add(plan.dropped_batches, " left out");
  add(plan.split_batches, " split in two");
  if (!evened.empty()) evened += " to match them (LoaderOptions::uneven_ranks)";
  log().info("mploader: epoch {}, rank {} of {}: {} batches of its own, the ranks {} to {}{}",
             epoch, s.rank, s.world_size, plan.batches_before_evening, plan.fewest_batches,
             plan.most_batches, evened);
}

// Samples delivered per unit of each stream: each batch holds samples of its stream's units
// alone, and the plan names each delivered sample once (repeated batches left out).
std::vector<std::vector<int64_t>> delivered_per_unit(const StreamEpoch& plan,
                                                     const SequenceSet& delivered) {
  std::vector<std::vector<int64_t>> got(plan.streams.size());
  std::vector<std::vector<std::pair<int64_t, size_t>>> by_begin(plan.streams.size());
  for (size_t k = 0; k < plan.streams.size(); ++k) {
    got[k].assign(plan.streams[k].size(), 0);
    for (size_t u = 0; u < plan.streams[k].size(); ++u) {
      by_begin[k].emplace_back(plan.streams[k][u].begin, u);
    }
    std::sort(by_begin[k].begin(), by_begin[k].end());
  }
  plan.for_each_delivered(delivered, [&](size_t k, int64_t begin, int64_t end) {
    auto it = std::upper_bound(by_begin[k].begin(), by_begin[k].end(),
                               std::make_pair(begin, std::numeric_limits<size_t>::max()));
    if (it == by_begin[k].begin()) return;
    const size_t u = std::prev(it)->second;
    got[k][u] += std::min(end, plan.streams[k][u].end) - begin;
  });
  return got;
}

// A rank's state names its own progress alone: it resumes that rank, with the same world size.
[[noreturn]] void refuse_rank_state(const ElasticProgress& saved, int64_t world, int64_t rank) {
  throw OptionError(
      "state", "mploader: cannot load the loader state: it is rank " +
                   std::to_string(saved.rank) + " of " + std::to_string(saved.world_size) +
                   "'s" + (saved.base != 0 ? ", in an epoch resumed from a job state," : "") +
                   " and this Loader is rank " + std::to_string(rank) + " of " +
                   std::to_string(world) + ". One rank's state resumes that rank alone, with "
                   "the same world size. To resume on another world size, merge the states of "
                   "every rank into a job state (merge_loader_states() or "
                   "gather_loader_state(), mploader/elastic.h) and load that on every rank.");
}

}  // namespace

std::vector<StreamPartProgress> progress_of_streams(const StreamingDataset& data,
                                                    const StreamEpoch& plan,
                                                    const SequenceSet& delivered) {
  const std::vector<std::vector<int64_t>> got = delivered_per_unit(plan, delivered);
  std::vector<StreamPartProgress> out(plan.streams.size());
  for (size_t k = 0; k < plan.streams.size(); ++k) {
    StreamPartProgress& part = out[k];
    const std::vector<SampleRange>& units = plan.streams[k];
    part.units = static_cast<int64_t>(units.size());
    for (size_t u = 0; u < units.size(); ++u) {
      const int64_t n = got[k][u];
      part.samples += units[u].size();
      part.delivered += n;
      if (n == units[u].size()) {
        const int64_t at = static_cast<int64_t>(u);
        if (!part.done.empty() && part.done.back().second == at) {
          ++part.done.back().second;
        } else {
          part.done.emplace_back(at, at + 1);
        }
      } else if (n > 0) {
        part.partial.push_back({data.shards()[data.locate(units[u].begin).shard].name,
                                units[u].begin, units[u].end, n});
      }
    }
  }
  return out;
}

EpochState::EpochState(std::shared_ptr<BatchSampler> sampler, const Dataset& dataset,
                       RecordedSettings settings, std::shared_ptr<Quarantine> quarantine,
                       std::shared_ptr<StreamSampler> stream, const ElasticSampler* elastic)
    : sampler_(std::move(sampler)), stream_(std::move(stream)),
      quarantine_(std::move(quarantine)), dataset_(dataset), settings_(settings),
      elastic_(stream_ ? nullptr : elastic, stream_.get(), dataset) {}

std::shared_ptr<const BatchList> EpochState::plan_of(uint64_t epoch) const {
  if (stream_) return std::make_shared<StreamBatches>(stream_->plan_ptr(epoch, streams_for(epoch)));
  if (job_ && job_->epoch == epoch) {
    return std::make_shared<ListedBatches>(
        elastic_.map_rest(*job_, static_cast<int64_t>(sampler_->max_batch_size()),
                          settings_.drop_last)
            .batches);
  }
  return std::make_shared<ListedBatches>(sampler_->batches(dataset_.size(), epoch));
}

int64_t EpochState::streams_for(uint64_t epoch) const {
  if (resume_ && resume_->stream && resume_->epoch == epoch) return resume_->stream->streams;
  if (running_ && epoch == epoch_) return running_streams_;
  return fresh_streams_.value_or(stream_->fresh_streams());
}

std::optional<StreamProgress> EpochState::stream_progress(
    uint64_t epoch, const SequenceSet& delivered) const {
  if (!stream_) return std::nullopt;
  const StreamingDataset& data = stream_->dataset();
  StreamProgress p;
  p.streams = streams_for(epoch);
  p.corpus = data.corpus_fingerprint();
  p.world_size = stream_->settings().world_size;
  p.rank = stream_->settings().rank;
  const StreamEpoch& plan = stream_->plan(epoch, p.streams);
  for (const std::vector<SampleRange>& ranges : plan.streams) {
    if (!ranges.empty()) {
      p.first_shard = data.shards()[data.locate(ranges.front().begin).shard].name;
      break;
    }
  }
  p.progress = progress_of_streams(data, plan, delivered);
  return p;
}

void EpochState::attach_prefetch(EpochPlan& plan) const {
  if (!stream_) return;
  plan.prefetch = std::make_shared<ShardPrefetchPlan>(
      stream_->plan_ptr(plan.epoch, running_streams_), stream_->dataset());
}

uint64_t EpochState::upcoming_epoch() const {
  if (resume_) return resume_->epoch;
  if (job_) return job_->epoch;
  return requested_epoch_ ? *requested_epoch_ : (started_any_ ? epoch_ + 1 : 0);
}

size_t EpochState::upcoming_batches() const {
  if (resume_) return resume_->plan.num_batches;
  return plan_of(upcoming_epoch())->size();
}

EpochPlan EpochState::plan_upcoming() {
  // Whatever ran is abandoned, even when this plan is refused: else the next batch would be
  // one of the old epoch while epoch() named the new one.
  running_ = false;
  epoch_ = upcoming_epoch();
  requested_epoch_.reset();
  started_any_ = true;
  refused_ = false;
  if (job_) return plan_job();
  elastic_.forget_job();
  std::shared_ptr<const BatchList> batches = plan_of(epoch_);
  const auto* listed = dynamic_cast<const ListedBatches*>(batches.get());
  if (stream_) {
    running_streams_ = streams_for(epoch_);  // before a loaded state goes
    describe_stream_epoch(stream_->plan(epoch_, running_streams_), stream_->settings(), epoch_);
  }
  try {
    // A sampler's own batches; a stream's plan is the loader's own.
    if (listed != nullptr) {
      check_batches(listed->all(), dataset_.size(), sampler_->max_batch_size());
    }
  } catch (const OptionError&) {
    // The sampler would give the same plan on every retry: a loop that catches the error to
    // skip a batch would never end. This error ends the epoch; the next next() says so.
    refused_ = true;
    resume_.reset();
    throw;
  }
  plan_ = fingerprint(*batches, dataset_.size());
  delivered_.assign(batches->size());
  if (elastic_.enabled()) {
    static const std::vector<std::vector<int64_t>> kNone;
    elastic_.started_fresh(epoch_, listed != nullptr ? listed->all() : kNone,
                           static_cast<int64_t>(sampler_->max_batch_size()), settings_.drop_last);
  }
  if (!resume_) {
    EpochPlan fresh{epoch_, std::move(batches), nullptr};
    attach_prefetch(fresh);
    return fresh;
  }
  ResumeState resume = std::move(*resume_);
  resume_.reset();
  check_same_plan(resume, plan_, settings_);  // a sampler that is not deterministic
  delivered_ = std::move(resume.delivered);
  EpochPlan left{epoch_, std::make_shared<RemainingBatches>(std::move(batches), delivered_),
                 nullptr};
  attach_prefetch(left);
  return left;
}

EpochPlan EpochState::plan_job() {
  JobState job = std::move(*job_);
  job_.reset();
  std::shared_ptr<const BatchList> batches;
  try {
    if (stream_) {
      running_streams_ = streams_for(epoch_);
      // prepare()d at load
      std::shared_ptr<const StreamEpoch> rest = stream_->plan_ptr(epoch_, running_streams_);
      elastic_.started_resumed(job, nullptr, rest.get());
      batches = std::make_shared<StreamBatches>(std::move(rest));
    } else {
      ElasticEpochs::MapRest rest = elastic_.map_rest(
          job, static_cast<int64_t>(sampler_->max_batch_size()), settings_.drop_last);
      elastic_.started_resumed(job, &rest, nullptr);
      batches = std::make_shared<ListedBatches>(std::move(rest.batches));
    }
  } catch (const OptionError&) {
    refused_ = true;  // as a refused plan: this error ends the epoch
    elastic_.forget_job();
    throw;
  }
  plan_ = fingerprint(*batches, dataset_.size());
  delivered_.assign(batches->size());
  EpochPlan plan{epoch_, std::move(batches), nullptr};
  attach_prefetch(plan);
  return plan;
}

bool EpochState::take_refusal() {
  if (running_ || !refused_) return false;
  refused_ = false;
  return true;
}

void EpochState::received(const Batch& batch) {
  if (batch.sequence() < delivered_.size()) delivered_.insert(batch.sequence());
}

ResumeState EpochState::state() const {
  ResumeState s = resume_ ? *resume_ : ResumeState{};
  s.quarantined = quarantine_->list();
  for (QuarantinedSample& q : s.quarantined) q.report_path.clear();  // this machine's path
  if (resume_) return s;
  s.settings = settings_;
  if (running_) {
    s.epoch = epoch_;
    s.plan = plan_;
    s.delivered = delivered_;
    s.stream = stream_progress(s.epoch, s.delivered);
    s.elastic = running_elastic(s.delivered);
    return s;
  }
  // An epoch not started: from its start, or from a pending job state, whose positions this
  // rank's state carries on so that a merge of the ranks' states gives the job state back.
  s.epoch = upcoming_epoch();
  s.plan = fingerprint(*plan_of(s.epoch), dataset_.size());
  s.delivered.assign(s.plan.num_batches);
  s.stream = stream_progress(s.epoch, s.delivered);
  if (elastic_.enabled()) s.elastic = elastic_.upcoming(job_ ? &*job_ : nullptr);
  return s;
}

std::optional<ElasticProgress> EpochState::running_elastic(const SequenceSet& delivered) const {
  if (!elastic_.enabled()) return std::nullopt;
  return elastic_.running(stream_ ? stream_->plan_ptr(epoch_, running_streams_).get() : nullptr,
                          delivered);
}

ResumeState EpochState::state_without(const Batch& ahead) const {
  ResumeState s = state();
  if (ahead.epoch() == s.epoch && ahead.sequence() < s.delivered.size() && running_) {
    s.delivered.erase(ahead.sequence());
    s.stream = stream_progress(s.epoch, s.delivered);
    s.elastic = running_elastic(s.delivered);
  }
  return s;
}

void EpochState::load(const std::string& text) {
  if (looks_like_job_state(text)) {
    load_job(job_from_text(text));
    return;
  }
  ResumeState saved = from_text(text);
  if (saved.elastic && elastic_.enabled() &&
      (saved.elastic->base != 0 || saved.elastic->world_size != elastic_.world_size() ||
       saved.elastic->rank != elastic_.rank())) {
    if (saved.elastic->world_size == 1) {  // the whole job's state already
      load_job(job_from_text(to_text(merge({saved}))));
      return;
    }
    refuse_rank_state(*saved.elastic, elastic_.world_size(), elastic_.rank());
  }
  drop_job();
  std::optional<StreamProgress> now;
  if (stream_) {
    now = StreamProgress{};
    now->corpus = stream_->dataset().corpus_fingerprint();
    now->world_size = stream_->settings().world_size;
    now->rank = stream_->settings().rank;
  }
  check_same_stream(saved, now);
  const std::shared_ptr<const BatchList> saved_plan =
      stream_ ? std::make_shared<StreamBatches>(
                    stream_->plan_ptr(saved.epoch, saved.stream->streams))
              : plan_of(saved.epoch);
  check_same_plan(saved, fingerprint(*saved_plan, dataset_.size()), settings_);
  resume_at(saved.epoch, saved.quarantined);
  resume_ = std::move(saved);
}

void EpochState::resume_at(uint64_t epoch, const std::vector<QuarantinedSample>& quarantined) {
  running_ = false;  // the next iteration starts the resumed epoch
  refused_ = false;
  requested_epoch_.reset();
  started_any_ = true;
  epoch_ = epoch;
  quarantine_->restore(quarantined);
}

void EpochState::load_job(JobState job) {
  elastic_.check_job(job, settings_);
  drop_job();
  resume_at(job.epoch, job.quarantined);
  resume_.reset();
  elastic_.prepare(job);
  job_ = std::move(job);
  try {
    upcoming_batches();  // plans the rest now: too few samples for the ranks is refused here
  } catch (const OptionError&) {
    drop_job();
    throw;
  }
}

void EpochState::drop_job() {
  job_.reset();
  elastic_.forget_job();
}

void EpochState::request(uint64_t epoch) {
  if (resume_ && resume_->epoch != epoch) {
    log().warn("mploader: set_epoch({}) discards the loaded state of epoch {}; epoch {} "
               "starts from its first batch",
               epoch, resume_->epoch, epoch);
    resume_.reset();
  }
  if (job_ && job_->epoch != epoch) {
    log().warn("mploader: set_epoch({}) discards the loaded job state of epoch {}; epoch {} "
               "starts from its first batch",
               epoch, job_->epoch, epoch);
    drop_job();
  }
  requested_epoch_ = epoch;
}

}  // namespace mploader::detail
