// Fuzzes what a pack's reader parses (shards/pack_format.cc, shards/npy_member.cc): the first
// byte picks the parser, the rest is its input. 0: a pack description (mploader-pack.json), and
// each shard it lists checked against an index header made from the rest; 1: a .npy member;
// 2: an index header and one record. Refusing is fine (OptionError for a description,
// mploader::Error for an index, BadSample for a member); a crash, UB, another exception, or a
// runaway allocation is not.
#include "shards/npy_member.h"
#include "shards/pack_format.h"
#include "shards/sample_decode.h"

#include <mploader/errors.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace detail = mploader::shards::detail;

namespace {

void description(const uint8_t* data, size_t size) {
  try {
    const detail::PackDescription pack =
        detail::parse_pack(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    int64_t next = 0;
    for (const detail::PackedShard& s : pack.shards) {
      if (s.first_sample != next) std::abort();  // the parser promised consecutive shards
      next += s.samples;
      const std::string h =
          detail::index_header(pack.fields.size(), s.first_sample, s.samples, s.tar_bytes);
      detail::check_index_header(reinterpret_cast<const uint8_t*>(h.data()), pack.fields.size(),
                                 s, s.index);
    }
    if (next != pack.samples) std::abort();
    // Written again, it parses to the same shards.
    if (detail::parse_pack(detail::pack_text(pack), "again").shards.size() != pack.shards.size()) {
      std::abort();
    }
  } catch (const mploader::OptionError&) {
  }
}

void index(const uint8_t* data, size_t size) {
  if (size < detail::kIndexHeaderBytes + 1) return;
  const size_t fields = data[0] % 8;
  detail::PackedShard shard;
  shard.samples = 1;
  try {
    detail::check_index_header(data + 1, fields, shard, "fuzz.idx");
  } catch (const mploader::Error&) {
  }
  const size_t record = detail::index_record_bytes(fields);
  if (size >= 1 + detail::kIndexHeaderBytes + record) {
    std::vector<detail::MemberSpan> spans(fields);
    unsigned char sha256[32];
    detail::read_record(data + 1 + detail::kIndexHeaderBytes, fields, spans.data(), sha256);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0:
      description(data + 1, size - 1);
      break;
    case 1:
      try {
        detail::npy_tensor(data + 1, size - 1, "fuzz.npy");
      } catch (const detail::BadSample&) {
      }
      break;
    default:
      index(data + 1, size - 1);
  }
  return 0;
}
