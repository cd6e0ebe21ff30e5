#include "loader/resume_state.h"
#include "util/fnv1a.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <type_traits>

namespace mploader::detail {
namespace {

using nlohmann::json;

constexpr const char* kVersionKey = "mploader_loader_state";
constexpr uint64_t kVersion = 1;
// A plan holds every batch's index list (at least 32 bytes each): 2^32 batches are over
// 128 GiB, so no saved epoch had more, and a bigger count would only allocate `delivered`.
constexpr uint64_t kMaxBatches = uint64_t{1} << 32;
const std::string kFix =
    " Pass load_state_dict() the unmodified text a Loader::state_dict() returned, or start "
    "without it.";

// Hex text: JSON readers outside C++ often lose integers above 2^53.
std::string hex(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

[[noreturn]] void refuse(const std::string& what) {
  throw OptionError("state", "mploader: cannot load the loader state: " + what + "." + kFix);
}

const json& field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) refuse(std::string("the field \"") + name + "\" is missing");
  return *it;
}

uint64_t unsigned_field(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_number_unsigned()) {
    refuse(std::string("the field \"") + name + "\" is " + value.dump() +
           ", not an unsigned integer");
  }
  return value.get<uint64_t>();
}

uint64_t hex_field(const json& object, const char* name) {
  const json& value = field(object, name);
  const std::string text = value.is_string() ? value.get<std::string>() : "";
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(text.c_str(), &end, 16);
  if (text.size() != 16 || end != text.c_str() + text.size()) {
    refuse(std::string("the field \"") + name + "\" is " + value.dump() +
           ", not 16 hexadecimal digits");
  }
  return parsed;
}

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

int64_t count_field(const json& object, const char* name) {
  const uint64_t value = unsigned_field(object, name);
  if (value > static_cast<uint64_t>(INT64_MAX)) {
    refuse(std::string("the field \"") + name + "\" is " + std::to_string(value) +
           ", beyond any count");
  }
  return static_cast<int64_t>(value);
}

std::string text_field(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_string()) {
    refuse(std::string("the field \"") + name + "\" is " + value.dump() + ", not text");
  }
  return value.get<std::string>();
}

const json& list_field(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_array()) refuse(std::string("the field \"") + name + "\" is not a list");
  return value;
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

json quarantined_json(const std::vector<QuarantinedSample>& samples) {
  json out = json::array();
  for (const QuarantinedSample& s : samples) {
    out.push_back(json{{"index", s.index}, {"epoch", s.epoch}, {"deaths", s.deaths},
                       {"cause", s.cause}});
  }
  return out;
}

std::vector<QuarantinedSample> quarantined_from(const json& j, uint64_t dataset_size) {
  if (!j.is_array()) refuse("the field \"quarantined\" is not a list");
  std::vector<QuarantinedSample> samples;
  for (const json& s : j) {
    if (!s.is_object()) refuse("an entry of \"quarantined\" is " + s.dump());
    QuarantinedSample q;
    q.index = count_field(s, "index");
    if (static_cast<uint64_t>(q.index) >= dataset_size) {
      refuse("the field \"quarantined\" names sample " + std::to_string(q.index) +
             " of a dataset of " + std::to_string(dataset_size) + " samples");
    }
    q.epoch = unsigned_field(s, "epoch");
    q.deaths = count_field(s, "deaths");
    const json& cause = field(s, "cause");
    if (!cause.is_string()) refuse("a quarantined sample's \"cause\" is " + cause.dump());
    q.cause = cause.get<std::string>();
    samples.push_back(std::move(q));
  }
  return samples;
}

uint64_t checksum(const json& body) {
  Fnv1a h;
  h.add(body.dump());  // keys sorted (std::map), so the text is canonical
  return h.value();
}

}  // namespace

PlanFingerprint fingerprint(const std::vector<std::vector<int64_t>>& batches,
                            size_t dataset_size) {
  Fnv1a h;
  h.add(static_cast<uint64_t>(batches.size()));
  for (const std::vector<int64_t>& batch : batches) {
    h.add(static_cast<uint64_t>(batch.size()));
    for (int64_t index : batch) h.add(static_cast<uint64_t>(index));
  }
  return PlanFingerprint{dataset_size, batches.size(), h.value()};
}

std::string to_text(const ResumeState& state) {
  json body{{kVersionKey, kVersion},
            {"epoch", state.epoch},
            {"dataset_size", state.plan.dataset_size},
            {"num_batches", state.plan.num_batches},
            {"plan_hash", hex(state.plan.hash)},
            {"delivered", delivered_ranges(state.delivered)},
            {"settings", settings_json(state.settings)}};
  if (state.stream) body["stream"] = stream_json(*state.stream);
  // Only when there are some: a state without them reads as before, by any version.
  if (!state.quarantined.empty()) body["quarantined"] = quarantined_json(state.quarantined);
  body["checksum"] = hex(checksum(body));
  return body.dump();
}

ResumeState from_text(const std::string& text) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {  // parse_error; out_of_range for a number like 1e400
    refuse("the text (" + std::to_string(text.size()) + " bytes) is not valid JSON, it may be "
           "truncated (" + e.what() + ")");
  }
  if (!body.is_object() || !body.contains(kVersionKey)) {
    refuse(std::string("the text is not a Loader state (no \"") + kVersionKey + "\" field)");
  }
  const uint64_t version = unsigned_field(body, kVersionKey);
  if (version != kVersion) {
    refuse("it is of version " + std::to_string(version) + ", and this mploader reads version " +
           std::to_string(kVersion));
  }
  const uint64_t saved_checksum = hex_field(body, "checksum");
  body.erase("checksum");
  if (checksum(body) != saved_checksum) {
    refuse("its checksum does not match its contents: the text was altered or damaged");
  }
  ResumeState state;
  state.epoch = unsigned_field(body, "epoch");
  state.plan.dataset_size = unsigned_field(body, "dataset_size");
  state.plan.num_batches = unsigned_field(body, "num_batches");
  if (state.plan.num_batches > kMaxBatches) {
    refuse("the field \"num_batches\" is " + std::to_string(state.plan.num_batches) +
           ", more than the " + std::to_string(kMaxBatches) + " batches any Loader's epoch "
           "plan can hold in memory");
  }
  state.plan.hash = hex_field(body, "plan_hash");
  state.delivered = delivered_from(field(body, "delivered"), state.plan.num_batches);
  state.settings = settings_from(field(body, "settings"));
  if (body.contains("stream")) state.stream = stream_from(body["stream"]);
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
