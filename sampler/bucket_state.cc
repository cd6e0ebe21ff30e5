// BucketSamplerState as JSON, for checkpoints: {"epoch":3,"seed":1,"batches_consumed":120,
// "world_size":8,"fingerprint":"0x5f2c..."}. The fingerprint is a hex string so that readers
// with 53-bit numbers (JavaScript, jq) keep it exact.
// Thread-safety: pure functions.
#include <mploader/bucket_sampler.h>
#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

namespace mploader {
namespace {

const char* const kExample =
    R"({"epoch":0,"seed":0,"batches_consumed":0,"world_size":1,"fingerprint":"0x0"})";

[[noreturn]] void bad_state(const std::string& what) {
  throw OptionError("state", "mploader: the bucket sampler state is not usable: " + what +
                                 "; it must look like " + kExample +
                                 " (as BucketSamplerState::to_json writes it)");
}

uint64_t unsigned_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) bad_state(std::string("it has no \"") + key + "\"");
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_unsigned()) {
    bad_state(std::string("\"") + key + "\" is " + v.dump() + ", not a whole number >= 0");
  }
  return v.get<uint64_t>();
}

uint64_t hex_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_string()) {
    bad_state(std::string("\"") + key + "\" is missing or not a string");
  }
  const std::string text = j.at(key).get<std::string>();
  char* end = nullptr;
  const uint64_t value = std::strtoull(text.c_str(), &end, 16);
  if (text.rfind("0x", 0) != 0 || text.size() < 3 || text.size() > 18 || *end != '\0') {
    bad_state(std::string("\"") + key + "\" is \"" + text + "\", not a 0x hex number");
  }
  return value;
}

}  // namespace

std::string BucketSamplerState::to_json() const {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(fingerprint));
  nlohmann::json j = {{"epoch", epoch},
                      {"seed", seed},
                      {"batches_consumed", batches_consumed},
                      {"world_size", world_size},
                      {"fingerprint", hex}};
  return j.dump();
}

BucketSamplerState BucketSamplerState::from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad_state("it is not a JSON object");
  BucketSamplerState s;
  s.epoch = unsigned_field(j, "epoch");
  s.seed = unsigned_field(j, "seed");
  s.batches_consumed = unsigned_field(j, "batches_consumed");
  const uint64_t world = unsigned_field(j, "world_size");
  if (world < 1 || world > (uint64_t{1} << 31)) {
    bad_state("\"world_size\" is " + std::to_string(world) + ", not 1 to 2^31");
  }
  s.world_size = static_cast<int64_t>(world);
  s.fingerprint = hex_field(j, "fingerprint");
  return s;
}

}  // namespace mploader
