// The JSON pieces that a Loader's saved states share (loader/resume_state.h for one rank's,
// loader/job_state.h for a whole job's): numbers read with the field named in every refusal,
// 64-bit values as hex, a checksum over the canonical text, and sets of positions as runs.
//
// Pure functions; no shared state.
#pragma once

#include "util/sequence_set.h"

#include <mploader/stats.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail::state_json {

using nlohmann::json;

// The most positions a saved epoch may name: sample indices are int64. A count costs no memory
// (SequenceSet keeps ranges); what a state names does, in the ranges of its text.
constexpr uint64_t kMaxPositions = uint64_t{INT64_MAX};
// Runs with a step expand into a range per position. In an order of at most this many
// positions (a map-style sampler's: none makes over 10^9) they may name every position, whose
// set then costs 128 MiB at most, as bits; in a larger one (a stream's), positions come in
// runs of consecutive ones, and runs with a step may name a few positions per run of the text.
constexpr uint64_t kMaxStridedOrder = uint64_t{1} << 30;

// The deepest nesting of lists and objects a state may have.
constexpr int kMaxNesting = 16;
// How deep `text` nests lists and objects (outside strings), read without parsing it.
int nesting_depth(const std::string& text);

// Throws OptionError("state"): "cannot load the loader state: <what>." and how to fix it.
[[noreturn]] void refuse(const std::string& what);

// Hex text: JSON readers outside C++ often lose integers above 2^53.
std::string hex(uint64_t value);

// A field of `object`; refuse() naming it when it is missing or of another type.
const json& field(const json& object, const char* name);
uint64_t unsigned_field(const json& object, const char* name);
uint64_t hex_field(const json& object, const char* name);
int64_t count_field(const json& object, const char* name);  // an unsigned that fits int64
std::string text_field(const json& object, const char* name);
const json& list_field(const json& object, const char* name);

// Of the text of `body` (keys sorted, so canonical).
uint64_t checksum(const json& body);
// Parses `text`, checks that it holds `version_key` at `version` and that its "checksum"
// matches, and returns it without the checksum. `what` names the kind of state in refusals.
json checked_body(const std::string& text, const char* version_key, uint64_t version,
                  const char* what);
// Adds the checksum of `body` to it and returns the text.
std::string sealed_text(json body);

// A set of positions as runs [first, step, count]: a rank's positions in a job's order are
// often every world_size-th one, or one range, and either is one run however long.
json position_runs(const SequenceSet& positions);
// The set over `size` positions that `runs` (field `name`) holds; refuse() for runs that are
// not sorted or lie outside it.
SequenceSet positions_from(const json& runs, uint64_t size, const char* name);

// Samples quarantined after killing workers, as saved states list them; refuse() for an index
// outside a dataset of `dataset_size`.
json quarantined_json(const std::vector<QuarantinedSample>& samples);
std::vector<QuarantinedSample> quarantined_from(const json& list, uint64_t dataset_size);

}  // namespace mploader::detail::state_json
