#include "loader/state_json.h"

#include "util/fnv1a.h"

#include <mploader/errors.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace mploader::detail::state_json {
namespace {

const std::string kFix =
    " Pass load_state_dict() the unmodified text a Loader::state_dict() or "
    "merge_loader_states() returned, or start without it.";

}  // namespace

std::string hex(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

void refuse(const std::string& what) {
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

uint64_t checksum(const json& body) {
  Fnv1a h;
  h.add(body.dump());  // keys sorted (std::map), so the text is canonical
  return h.value();
}

int nesting_depth(const std::string& text) {
  bool in_string = false, escaped = false;
  int depth = 0, most = 0;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      most = std::max(most, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return most;
}

json checked_body(const std::string& text, const char* version_key, uint64_t version,
                  const char* what) {
  // The JSON parser allocates per level of nesting (10 MB of '[' took 0.75 GiB): a state
  // nests 6 deep, so anything deeper is refused before it is parsed.
  if (const int depth = nesting_depth(text); depth > kMaxNesting) {
    refuse("the text (" + std::to_string(text.size()) + " bytes) nests lists and objects " +
           std::to_string(depth) + " deep, and a state nests " + std::to_string(kMaxNesting) +
           " at most: it is not a state");
  }
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {  // parse_error; out_of_range for a number like 1e400
    refuse("the text (" + std::to_string(text.size()) + " bytes) is not valid JSON, it may be "
           "truncated (" + e.what() + ")");
  }
  if (!body.is_object() || !body.contains(version_key)) {
    refuse(std::string("the text is not ") + what + " (no \"" + version_key + "\" field)");
  }
  const uint64_t found = unsigned_field(body, version_key);
  if (found != version) {
    refuse("it is of version " + std::to_string(found) + ", and this mploader reads version " +
           std::to_string(version));
  }
  const uint64_t saved_checksum = hex_field(body, "checksum");
  body.erase("checksum");
  if (checksum(body) != saved_checksum) {
    refuse("its checksum does not match its contents: the text was altered or damaged");
  }
  return body;
}

std::string sealed_text(json body) {
  body["checksum"] = hex(checksum(body));
  return body.dump();
}

json position_runs(const SequenceSet& positions) {
  json runs = json::array();
  uint64_t first = 0, step = 1, count = 0;  // the run being built
  auto flush = [&] {
    if (count > 0) runs.push_back(json::array({first, count > 1 ? step : 1, count}));
    count = 0;
  };
  // Range by range, never all at once: a rank's positions may be millions of single ones.
  positions.for_each_range([&](uint64_t begin, uint64_t end) {
    if (end - begin > 1) {
      flush();
      runs.push_back(json::array({begin, uint64_t{1}, end - begin}));
    } else if (count == 1 && begin > first) {
      step = begin - first;
      count = 2;
    } else if (count > 1 && begin == first + step * count) {
      ++count;
    } else {
      flush();
      first = begin;
      count = 1;
    }
  });
  flush();
  return runs;
}

SequenceSet positions_from(const json& runs, uint64_t size, const char* name) {
  if (!runs.is_array()) refuse(std::string("the field \"") + name + "\" is not a list of runs");
  SequenceSet set(size);
  uint64_t previous = 0;
  uint64_t strided = 0;  // positions named by runs with a step
  const uint64_t strided_budget =
      size <= kMaxStridedOrder ? size : 4 * static_cast<uint64_t>(runs.size()) + 4096;
  for (const json& r : runs) {
    const bool triple = r.is_array() && r.size() == 3 && r[0].is_number_unsigned() &&
                        r[1].is_number_unsigned() && r[2].is_number_unsigned();
    const uint64_t first = triple ? r[0].get<uint64_t>() : 0;
    const uint64_t step = triple ? r[1].get<uint64_t>() : 0;
    const uint64_t count = triple ? r[2].get<uint64_t>() : 0;
    // last = first + step * (count - 1) < size, checked without overflow.
    const bool fits = step >= 1 && count >= 1 && first < size && first >= previous &&
                      (count - 1) <= (size - 1 - first) / step;
    if (!triple || !fits) {
      refuse(std::string("the field \"") + name + "\" holds " + r.dump() +
             ", not a sorted run [first, step, count] within the epoch's " +
             std::to_string(size) + " positions");
    }
    if (step == 1) {
      set.insert_range(first, first + count);
    } else {
      strided += count;
      if (strided > strided_budget) {
        refuse(std::string("the field \"") + name + "\" names more than " +
               std::to_string(strided_budget) + " of its " + std::to_string(size) +
               " positions one by one in runs with a step, which no state of an order that "
               "large holds");
      }
      for (uint64_t i = 0; i < count; ++i) set.insert(first + i * step);
    }
    previous = first;
  }
  return set;
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

}  // namespace mploader::detail::state_json
