// Fuzzes the remote component's parsers (remote/): the shard manifest, an S3 ListObjectsV2
// page and an S3 error body, and brace patterns. The input's first byte picks the parser.
// Refusing is fine (mploader::Error, from every parser); a crash, UB, a hang or another
// exception is not. An accepted manifest must have every count non-negative and every name
// once; a pattern expands only when it has at most two brace groups of at most three digits
// each, so that a run stays in memory.
#include <mploader/errors.h>
#include <mploader/remote/remote.h>

#include "remote/manifest.h"
#include "remote/s3_list.h"

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

namespace {

void check_manifest(const std::string& text) {
  try {
    const auto m = mploader::remote::detail::parse_manifest(text, "fuzz.json");
    std::set<std::string> names;
    for (const auto& e : m.shards) {
      if (e.bytes < 0 || e.samples < 0 || !names.insert(e.name).second) std::abort();
    }
  } catch (const mploader::Error&) {
  }
}

void check_listing(const std::string& text) {
  try {
    const auto page = mploader::remote::detail::parse_list_objects_v2(text);
    for (const auto& o : page.objects) {
      if (o.size < 0) std::abort();
    }
  } catch (const mploader::Error&) {
  }
  (void)mploader::remote::detail::parse_s3_error(text);
}

bool small_pattern(const std::string& p) {
  int groups = 0, digits = 0;
  for (char c : p) {
    if (c == '{') {
      ++groups;
      digits = 0;
    } else if (c >= '0' && c <= '9') {
      if (++digits > 3) return false;
    } else {
      digits = 0;
    }
  }
  return groups <= 2 && p.size() <= 64;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      check_manifest(text);
      break;
    case 1:
      check_listing(text);
      break;
    default:
      if (!small_pattern(text)) return 0;
      try {
        (void)mploader::remote::expand_braces(text);
      } catch (const mploader::Error&) {
      }
  }
  return 0;
}
