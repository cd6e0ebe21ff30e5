#include "loader/resume_state.h"

#include "loader/state_json.h"
#include "util/fnv1a.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <type_traits>

namespace mploader::detail {
namespace {

using nlohmann::json;
using namespace state_json;

constexpr const char* kVersionKey = "mploader_loader_state";
constexpr uint64_t kVersion = 1;
// A count of batches costs no memory (SequenceSet keeps the delivered ranges), and no epoch
// has more batches than int64 indices.
constexpr uint64_t kMaxBatches = uint64_t{INT64_MAX};
json settings_json(const RecordedSettings& s) {
  return json{{"batch_size", s.batch_size}, {"drop_last", s.drop_last},
              {"shuffle", s.shuffle},       {"seed", s.seed},
              {"in_order", s.in_order},     {"num_workers", s.num_workers}};
}

// One recorded setting; `fallback` when it is missing or of another type (json::value() would
// throw json::type_error for a true where a number belongs).
template <typename T>
T setting(const json& j, const char* name, T fallback) {
  const auto it = j.find(name);
  if (it == j.end()) return fallback;
  const bool fits = std::is_same_v<T, bool> ? it->is_boolean() : it->is_number_integer();
  return fits ? it->template get<T>() : fallback;
}

// Only for naming differences; a missing or odd value is left at its default.
RecordedSettings settings_from(const json& j) {
  RecordedSettings s;
  if (!j.is_object()) return s;
  s.batch_size = setting(j, "batch_size", int64_t{0});
  s.drop_last = setting(j, "drop_last", false);
  s.shuffle = setting(j, "shuffle", false);
  s.seed = setting(j, "seed", uint64_t{0});
  s.in_order = setting(j, "in_order", true);
  s.num_workers = setting(j, "num_workers", int64_t{0});
  return s;
}

// Delivered sequences as sorted half-open ranges [begin, end): a prefix (in_order) is one pair.
json delivered_ranges(const SequenceSet& delivered) {
  json ranges = json::array();
  for (const auto& [begin, end] : delivered.ranges()) ranges.push_back(json::array({begin, end}));
  return ranges;
}

SequenceSet delivered_from(const json& ranges, uint64_t num_batches) {
  if (!ranges.is_array()) refuse("the field \"delivered\" is not a list of [begin, end) pairs");
  SequenceSet delivered(num_batches);
  uint64_t previous_end = 0;
  for (const json& r : ranges) {
    const bool pair = r.is_array() && r.size() == 2 && r[0].is_number_unsigned() &&
                      r[1].is_number_unsigned();
    const uint64_t begin = pair ? r[0].get<uint64_t>() : 0;
    const uint64_t end = pair ? r[1].get<uint64_t>() : 0;
    if (!pair || begin >= end || begin < previous_end || end > num_batches) {
      refuse("the field \"delivered\" holds " + r.dump() + ", not a sorted, disjoint [begin, "
             "end) range within the epoch's " + std::to_string(num_batches) + " batches");
    }
    delivered.insert_range(begin, end);
    previous_end = end;
  }
  return delivered;
}

json stream_json(const StreamProgress& p) {
  json progress = json::array();
  for (const StreamPartProgress& part : p.progress) {
    json partial = json::array();
    for (const UnitProgress& u : part.partial) {
      partial.push_back(json{{"shard", u.shard}, {"begin", u.begin}, {"end", u.end},
                             {"delivered", u.delivered}});
    }
    progress.push_back(json{{"units", part.units}, {"samples", part.samples},
                            {"delivered", part.delivered}, {"done", part.done},
                            {"partial", std::move(partial)}});
  }
  return json{{"streams", p.streams}, {"corpus", hex(p.corpus)}, {"world_size", p.world_size},
              {"rank", p.rank}, {"first_shard", p.first_shard},
              {"progress", std::move(progress)}};
}

StreamPartProgress part_from(const json& j) {
  if (!j.is_object()) refuse("an entry of \"stream.progress\" is " + j.dump());
  StreamPartProgress part{count_field(j, "units"), count_field(j, "samples"),
                          count_field(j, "delivered"), {}, {}};
  for (const json& run : list_field(j, "done")) {
    const bool pair = run.is_array() && run.size() == 2 && run[0].is_number_unsigned() &&
                      run[1].is_number_unsigned();
    if (!pair) refuse("a run of \"stream.progress.done\" is " + run.dump() + ", not a pair");
    part.done.emplace_back(run[0].get<int64_t>(), run[1].get<int64_t>());
  }
  for (const json& u : list_field(j, "partial")) {
    if (!u.is_object()) refuse("an entry of \"stream.progress.partial\" is " + u.dump());
    part.partial.push_back({text_field(u, "shard"), count_field(u, "begin"),
                            count_field(u, "end"), count_field(u, "delivered")});
  }
  return part;
}

StreamProgress stream_from(const json& j) {
  if (!j.is_object()) refuse("the field \"stream\" is not an object");
  StreamProgress p;
  p.streams = count_field(j, "streams");
  if (p.streams < 1) refuse("the field \"stream.streams\" is 0; a stream has at least 1");
  p.corpus = hex_field(j, "corpus");
  p.world_size = count_field(j, "world_size");
  p.rank = count_field(j, "rank");
  if (!j.contains("progress")) {
    // The old form: one record per shard ({"name", "samples", "delivered"}), for people only.
    for (const json& s : list_field(j, "shards")) {
      if (!s.is_object()) refuse("an entry of \"stream.shards\" is " + s.dump());
      const std::string name = text_field(s, "name");
      count_field(s, "samples");
      count_field(s, "delivered");
      if (p.first_shard.empty()) p.first_shard = name;
    }
    return p;
  }
  p.first_shard = text_field(j, "first_shard");
  for (const json& part : list_field(j, "progress")) p.progress.push_back(part_from(part));
  return p;
}

json elastic_json(const ElasticProgress& e) {
  return json{{"order", hex(e.order)}, {"positions", e.positions}, {"world_size", e.world_size},
              {"rank", e.rank}, {"steps", e.steps}, {"base", hex(e.base)},
              {"delivered", position_runs(e.delivered)}};
}

ElasticProgress elastic_from(const json& j) {
  if (!j.is_object()) refuse("the field \"elastic\" is not an object");
  ElasticProgress e;
  e.order = hex_field(j, "order");
  e.positions = unsigned_field(j, "positions");
  if (e.positions > kMaxPositions) {
    refuse("the field \"elastic.positions\" is " + std::to_string(e.positions) +
           ", more than any epoch's " + std::to_string(kMaxPositions));
  }
  e.world_size = count_field(j, "world_size");
  e.rank = count_field(j, "rank");
  if (e.world_size < 1 || e.rank >= e.world_size) {
    refuse("the fields \"elastic.rank\" and \"world_size\" are " + std::to_string(e.rank) +
           " and " + std::to_string(e.world_size) + ": no such rank");
  }
  e.steps = unsigned_field(j, "steps");
  e.base = hex_field(j, "base");
  e.delivered = positions_from(field(j, "delivered"), e.positions, "elastic.delivered");
  return e;
}


}  // namespace

std::string to_text(const ResumeState& state) {
  json body{{kVersionKey, kVersion},
            {"epoch", state.epoch},
            {"dataset_size", state.plan.dataset_size},
            {"num_batches", state.plan.num_batches},
            {"plan_hash", hex(state.plan.hash)},
            {"delivered", delivered_ranges(state.delivered)},
            {"settings", settings_json(state.settings)}};
  if (state.stream) body["stream"] = stream_json(*state.stream);
  if (state.elastic) body["elastic"] = elastic_json(*state.elastic);
  // Only when there are some: a state without them reads as before, by any version.
  if (!state.quarantined.empty()) body["quarantined"] = quarantined_json(state.quarantined);
  return sealed_text(std::move(body));
}

ResumeState from_text(const std::string& text) {
  const json body = checked_body(text, kVersionKey, kVersion, "a Loader state");
  ResumeState state;
  state.epoch = unsigned_field(body, "epoch");
  state.plan.dataset_size = unsigned_field(body, "dataset_size");
  state.plan.num_batches = unsigned_field(body, "num_batches");
  if (state.plan.num_batches > kMaxBatches) {
    refuse("the field \"num_batches\" is " + std::to_string(state.plan.num_batches) +
           ", more than the " + std::to_string(kMaxBatches) + " batches any Loader's epoch "
           "can have");
  }
  state.plan.hash = hex_field(body, "plan_hash");
  state.delivered = delivered_from(field(body, "delivered"), state.plan.num_batches);
  state.settings = settings_from(field(body, "settings"));
  if (body.contains("stream")) state.stream = stream_from(body["stream"]);
  if (body.contains("elastic")) state.elastic = elastic_from(body["elastic"]);
  if (body.contains("quarantined")) {
    state.quarantined = quarantined_from(body["quarantined"], state.plan.dataset_size);
  }
  return state;
}

void check_same_stream(const ResumeState& saved, const std::optional<StreamProgress>& now) {
  const std::string fix = " Load the state this rank saved over this corpus, or start the epoch "
                          "afresh without load_state_dict().";
  if (!saved.stream && !now) return;
  if (!saved.stream || !now) {
    throw OptionError("state", std::string("mploader: cannot load the loader state: it was "
                                           "saved by a Loader over ") +
                                   (saved.stream ? "a StreamingDataset" : "a map-style dataset") +
                                   ", and this Loader reads " +
                                   (now ? "a StreamingDataset." : "a map-style dataset.") + fix);
  }
  const StreamProgress& was = *saved.stream;
  if (was.corpus != now->corpus) {
    std::string first = was.first_shard.empty() ? "none" : "'" + was.first_shard + "'";
    throw OptionError("state", "mploader: cannot load the loader state: it was saved over "
                               "another corpus (shard fingerprint " + hex(was.corpus) +
                                   ", this dataset's " + hex(now->corpus) +
                                   "; the first shard it read: " + first +
                                   "): the shards' names or sample counts differ." + fix);
  }
  if (was.world_size != now->world_size || was.rank != now->rank) {
    throw OptionError("state", "mploader: cannot load the loader state: it is rank " +
                                   std::to_string(was.rank) + " of " +
                                   std::to_string(was.world_size) + "'s, and this Loader is rank " +
                                   std::to_string(now->rank) + " of " +
                                   std::to_string(now->world_size) +
                                   ". Each rank loads the state it saved itself, with the same "
                                   "world size.");
  }
}

void check_same_plan(const ResumeState& saved, const PlanFingerprint& current,
                     const RecordedSettings& now) {
  const PlanFingerprint& was = saved.plan;
  if (was.dataset_size == current.dataset_size && was.num_batches == current.num_batches &&
      was.hash == current.hash) {
    return;
  }
  std::string differs;
  auto note = [&differs](const std::string& name, const std::string& then,
                         const std::string& now_value) {
    if (then == now_value) return;
    differs += (differs.empty() ? "" : ", ") + name + " " + then + " then, " + now_value + " now";
  };
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  note("dataset size", std::to_string(was.dataset_size), std::to_string(current.dataset_size));
  note("batches in the epoch", std::to_string(was.num_batches),
       std::to_string(current.num_batches));
  note("batch_size", std::to_string(saved.settings.batch_size), std::to_string(now.batch_size));
  note("drop_last", flag(saved.settings.drop_last), flag(now.drop_last));
  note("shuffle", flag(saved.settings.shuffle), flag(now.shuffle));
  note("seed", std::to_string(saved.settings.seed), std::to_string(now.seed));
  if (differs.empty()) {
    differs = "same dataset size, batch count and options, but the sampler or batch_sampler "
              "orders the batches differently (it must be the same one, deterministic in "
              "(dataset_size, epoch))";
  }
  throw OptionError(
      "state", "mploader: cannot load the loader state: it was taken from another batch plan "
               "for epoch " + std::to_string(saved.epoch) + " (" + differs +
                   "), so its record of delivered batches does not apply. Build the Loader "
                   "with the dataset and options the state was taken with, or start the epoch "
                   "afresh without load_state_dict().");
}

}  // namespace mploader::detail
