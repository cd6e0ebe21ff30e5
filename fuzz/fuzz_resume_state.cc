// Fuzzes the parsers and checks behind Loader::load_state_dict (loader/resume_state.cc and, for
// the job states of merge_loader_states(), loader/job_state.cc): any
// bytes as the saved state, against a fixed small Loader's plan (10 samples, batch_size 4: 3
// batches). A state is checksummed, so mutated text mostly stops at the checksum; an input
// that starts with 's' is signed first (the rest, re-checksummed when it is a JSON object), so
// that the fuzzer reaches the fields behind the checksum as a user editing a state would.
// Refusing with OptionError is fine; a crash, UB, another exception, or an accepted state that
// does not survive to_text() and back, is not.
#include "loader/job_state.h"
#include "loader/resume_state.h"
#include "util/fnv1a.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace mploader::detail;

// The checksum resume_state.cc writes: FNV-1a over the compact text without "checksum".
std::string signed_text(const std::string& text) {
  nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
  if (!body.is_object()) return text;
  body.erase("checksum");
  mploader::detail::Fnv1a hash;
  hash.add(body.dump());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash.value()));
  body["checksum"] = hex;
  return body.dump();
}

const PlanFingerprint& loader_plan() {
  // A listed plan's fingerprint (BatchList::hash): the count, then each batch's length and
  // indices.
  static const PlanFingerprint plan = [] {
    const std::vector<std::vector<int64_t>> batches = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}};
    mploader::detail::Fnv1a h;
    h.add(static_cast<uint64_t>(batches.size()));
    for (const std::vector<int64_t>& b : batches) {
      h.add(static_cast<uint64_t>(b.size()));
      for (int64_t i : b) h.add(static_cast<uint64_t>(i));
    }
    return PlanFingerprint{10, batches.size(), h.value()};
  }();
  return plan;
}

// A job state (merge_loader_states()) read back: the same positions when saved again.
void fuzz_job_state(const std::string& text) {
  JobState job;
  try {
    job = job_from_text(text);
  } catch (const mploader::OptionError&) {
    return;
  }
  const JobState again = job_from_text(to_text(job));
  if (again.delivered != job.delivered || again.epoch != job.epoch ||
      again.positions != job.positions) {
    std::fprintf(stderr, "an accepted job state changed when saved again\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == 's') text = signed_text(text.substr(1));
  if (looks_like_job_state(text)) {
    fuzz_job_state(text);
    return 0;
  }
  ResumeState saved;
  try {
    saved = from_text(text);
  } catch (const mploader::OptionError&) {
    return 0;
  }
  // What a loaded state must give back: the same state when saved again.
  const ResumeState again = from_text(to_text(saved));
  if (again.delivered != saved.delivered || again.epoch != saved.epoch ||
      again.plan.hash != saved.plan.hash || again.stream.has_value() != saved.stream.has_value() ||
      again.elastic.has_value() != saved.elastic.has_value() ||
      (saved.elastic && again.elastic->delivered != saved.elastic->delivered)) {
    std::fprintf(stderr, "an accepted state changed when saved again\n");
    std::abort();
  }
  RecordedSettings settings;
  settings.batch_size = 4;
  std::optional<StreamProgress> stream;
  if (saved.stream) stream = StreamProgress{2, 0x1234, 1, 0, {}, {}};
  try {
    check_same_stream(saved, stream);
    check_same_plan(saved, loader_plan(), settings);
  } catch (const mploader::OptionError&) {
  }
  try {
    fuzz_job_state(to_text(merge({saved})));  // a job of one rank
  } catch (const mploader::OptionError&) {
  }
  return 0;
}
