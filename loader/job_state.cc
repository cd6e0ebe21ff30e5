#include "loader/job_state.h"

#include "loader/state_json.h"

#include <mploader/elastic.h>
#include <mploader/errors.h>

#include <algorithm>
#include <set>
#include <utility>

namespace mploader {
namespace detail {
namespace {

using nlohmann::json;
using namespace state_json;

constexpr const char* kVersionKey = "mploader_job_state";
constexpr uint64_t kVersion = 1;
const std::string kMergeFix =
    " Merge the states that every rank of one job saved at the same step: one per rank, each "
    "from Loader::state_dict().";

[[noreturn]] void refuse_merge(const std::string& what) {
  throw OptionError("state", "mploader: cannot merge the loader states: " + what + "." +
                                 kMergeFix);
}

std::string list_ranks(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  return ranks.size() > 8 ? out + ", ..." : out;
}

// Every state has an elastic part of the same epoch, order and world, and every rank is there.
void check_complete(const std::vector<ResumeState>& ranks) {
  if (ranks.empty()) refuse_merge("no state was given");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].elastic) {
      refuse_merge("state " + std::to_string(i) + " (of epoch " +
                   std::to_string(ranks[i].epoch) + ") was saved by a Loader that cannot "
                   "resume on another world size: only a StreamingDataset, DistributedSampler "
                   "and DistributedBucketSampler (an ElasticSampler) can");
    }
  }
  const ElasticProgress& first = *ranks[0].elastic;
  std::vector<int64_t> seen(static_cast<size_t>(first.world_size), 0);
  for (const ResumeState& r : ranks) {
    const ElasticProgress& e = *r.elastic;
    if (r.epoch != ranks[0].epoch) {
      refuse_merge("rank " + std::to_string(e.rank) + "'s state is of epoch " +
                   std::to_string(r.epoch) + ", rank " + std::to_string(first.rank) + "'s of " +
                   std::to_string(ranks[0].epoch));
    }
    if (e.order != first.order || e.positions != first.positions) {
      refuse_merge("rank " + std::to_string(e.rank) + " read other data or ordered it otherwise "
                   "than rank " + std::to_string(first.rank) + " (order fingerprints " +
                   hex(e.order) + " and " + hex(first.order) + ", " +
                   std::to_string(e.positions) + " and " + std::to_string(first.positions) +
                   " samples in the epoch)");
    }
    if (e.world_size != first.world_size) {
      refuse_merge("rank " + std::to_string(e.rank) + " was one of " +
                   std::to_string(e.world_size) + " ranks, rank " + std::to_string(first.rank) +
                   " one of " + std::to_string(first.world_size));
    }
    if (++seen[static_cast<size_t>(e.rank)] > 1) {
      refuse_merge("rank " + std::to_string(e.rank) + "'s state was given twice");
    }
    if (e.base != first.base) {
      refuse_merge("rank " + std::to_string(e.rank) + " resumed from another job state than "
                   "rank " + std::to_string(first.rank) + " (" + hex(e.base) + " and " +
                   hex(first.base) + ")");
    }
  }
  std::vector<int64_t> missing;
  for (size_t r = 0; r < seen.size(); ++r) {
    if (seen[r] == 0) missing.push_back(static_cast<int64_t>(r));
  }
  if (!missing.empty()) {
    refuse_merge("the job had " + std::to_string(first.world_size) + " ranks, and no state of " +
                 "rank(s) " + list_ranks(missing) + " was given");
  }
}

// Ranks of one job take their steps together: states at different steps are from different
// checkpoints, and merging them would lose or repeat the samples in between.
void check_same_step(const std::vector<ResumeState>& ranks) {
  for (const ResumeState& r : ranks) {
    if (r.elastic->steps != ranks[0].elastic->steps) {
      refuse_merge("rank " + std::to_string(r.elastic->rank) + " had taken " +
                   std::to_string(r.elastic->steps) + " steps of epoch " +
                   std::to_string(r.epoch) + " and rank " +
                   std::to_string(ranks[0].elastic->rank) + " " +
                   std::to_string(ranks[0].elastic->steps) +
                   ": the states are from different checkpoints");
    }
  }
}


}  // namespace

std::string to_text(const JobState& job) {
  json body{{kVersionKey, kVersion},
            {"epoch", job.epoch},
            {"order", hex(job.order)},
            {"positions", job.positions},
            {"world_size", job.world_size},
            {"steps", job.steps},
            {"delivered", position_runs(job.delivered)},
            {"settings", json{{"batch_size", job.settings.batch_size},
                              {"drop_last", job.settings.drop_last},
                              {"shuffle", job.settings.shuffle},
                              {"seed", job.settings.seed}}},
            {"quarantined", quarantined_json(job.quarantined)}};
  return sealed_text(std::move(body));
}

bool looks_like_job_state(const std::string& text) {
  if (nesting_depth(text) > kMaxNesting) return false;  // from_text() refuses it
  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return body.is_object() && body.contains(kVersionKey);
}

JobState job_from_text(const std::string& text) {
  const json body = checked_body(text, kVersionKey, kVersion, "a job state");
  JobState job;
  job.id = checksum(body);  // the text's, which checked_body() verified
  job.epoch = unsigned_field(body, "epoch");
  job.order = hex_field(body, "order");
  job.positions = unsigned_field(body, "positions");
  if (job.positions > kMaxPositions) {
    refuse("the field \"positions\" is " + std::to_string(job.positions) +
           ", more than any epoch's " + std::to_string(kMaxPositions));
  }
  job.world_size = count_field(body, "world_size");
  if (job.world_size < 1) refuse("the field \"world_size\" is 0");
  job.steps = unsigned_field(body, "steps");
  job.delivered = positions_from(field(body, "delivered"), job.positions, "delivered");
  const json& s = field(body, "settings");
  if (s.is_object()) {
    job.settings.batch_size = s.value("batch_size", int64_t{0});
    job.settings.drop_last = s.value("drop_last", false);
    job.settings.shuffle = s.value("shuffle", false);
    job.settings.seed = s.value("seed", uint64_t{0});
  }
  job.quarantined = quarantined_from(field(body, "quarantined"), job.positions);
  return job;
}

JobState merge(const std::vector<ResumeState>& ranks) {
  check_complete(ranks);
  check_same_step(ranks);
  const ResumeState* rank0 = &ranks[0];
  for (const ResumeState& r : ranks) {
    if (r.elastic->rank == 0) rank0 = &r;
  }
  JobState job;
  job.epoch = rank0->epoch;
  job.order = rank0->elastic->order;
  job.positions = rank0->elastic->positions;
  job.world_size = rank0->elastic->world_size;
  job.steps = rank0->elastic->steps;
  job.settings = rank0->settings;
  job.delivered.assign(job.positions);
  std::set<std::pair<int64_t, uint64_t>> quarantined;
  for (const ResumeState& r : ranks) {
    job.delivered.insert_all(r.elastic->delivered);
    for (const QuarantinedSample& q : r.quarantined) {
      if (quarantined.insert({q.index, q.epoch}).second) job.quarantined.push_back(q);
    }
  }
  return job;
}

}  // namespace detail

std::string merge_loader_states(const std::vector<std::string>& rank_states) {
  std::vector<detail::ResumeState> ranks;
  for (const std::string& text : rank_states) ranks.push_back(detail::from_text(text));
  return detail::to_text(detail::merge(ranks));
}

JobStateSummary summarize_job_state(const std::string& job_state) {
  const detail::JobState job = detail::job_from_text(job_state);
  return {job.epoch, job.world_size, job.steps, job.positions, job.delivered.count()};
}

}  // namespace mploader
