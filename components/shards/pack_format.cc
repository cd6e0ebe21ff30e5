// The packed layout's files (pack_format.h): the description, the index, the tar headers.
#include "shards/pack_format.h"
#include "shards/text.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

namespace mploader::shards::detail {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& why) {
  throw OptionError("pack", "the pack description " + in_quotes(source) + " " + why +
                                ": pack the data again with mploader-pack");
}

int64_t whole(const json& j, const char* key, const std::string& source, const std::string& of) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    bad(source, "has " + of + " without a whole, non-negative \"" + key + "\"");
  }
  return it->get<int64_t>();
}

std::string text(const json& j, const char* key, const std::string& source,
                 const std::string& of, bool hex = false) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
    bad(source, "has " + of + " without a \"" + key + "\"");
  }
  const std::string s = it->get<std::string>();
  bool ok = !hex || s.size() == 64;
  for (char c : s) ok = ok && (!hex || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok) bad(source, "has " + of + " whose \"" + key + "\" is not 64 lowercase hex digits");
  return s;
}

void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::vector<PackedField> parse_fields(const json& j, const std::string& source) {
  const auto it = j.find("fields");
  if (it == j.end() || !it->is_array() || it->empty()) bad(source, "has no \"fields\" list");
  std::vector<PackedField> fields;
  std::set<std::string> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& f = (*it)[i];
    const std::string of = "field " + std::to_string(i);
    PackedField field{text(f, "name", source, of), PackedKind::kNpy};
    if (!kind_of(text(f, "kind", source, of), field.kind)) {
      bad(source, "has " + of + " of a kind other than image, int, npy or text");
    }
    if (!seen.insert(field.name).second) bad(source, "lists field " + in_quotes(field.name) + " twice");
    fields.push_back(field);
  }
  return fields;
}

PackedShard parse_shard(const json& e, const std::string& source, size_t i) {
  const std::string of = "shard " + std::to_string(i);
  if (!e.is_object()) bad(source, "has " + of + " that is not an object");
  PackedShard s;
  s.tar = text(e, "tar", source, of);
  s.tar_bytes = whole(e, "tar_bytes", source, of);
  s.tar_sha256 = text(e, "tar_sha256", source, of, true);
  s.index = text(e, "index", source, of);
  s.index_bytes = whole(e, "index_bytes", source, of);
  s.index_sha256 = text(e, "index_sha256", source, of, true);
  s.first_sample = whole(e, "first_sample", source, of);
  s.samples = whole(e, "samples", source, of);
  return s;
}

}  // namespace

const char* kind_name(PackedKind kind) {
  switch (kind) {
    case PackedKind::kImage: return "image";
    case PackedKind::kInt: return "int";
    case PackedKind::kNpy: return "npy";
    case PackedKind::kText: return "text";
  }
  return "npy";
}

bool kind_of(const std::string& word, PackedKind& kind) {
  for (PackedKind k : {PackedKind::kImage, PackedKind::kInt, PackedKind::kNpy, PackedKind::kText}) {
    if (word == kind_name(k)) {
      kind = k;
      return true;
    }
  }
  return false;
}

std::string pack_text(const PackDescription& pack) {
  json fields = json::array();
  for (const PackedField& f : pack.fields) {
    fields.push_back(json{{"name", f.name}, {"kind", kind_name(f.kind)}});
  }
  std::string out = "{\"format\": \"mploader-pack\", \"version\": 1, \"samples\": " +
                    std::to_string(pack.samples) + ", \"key_digits\": " +
                    std::to_string(pack.key_digits) + ",\n \"fields\": " + fields.dump() +
                    ",\n \"settings\": " + json::parse(pack.settings).dump() + ",\n \"shards\": [";
  for (size_t i = 0; i < pack.shards.size(); ++i) {
    const PackedShard& s = pack.shards[i];
    const json e{{"tar", s.tar},       {"tar_bytes", s.tar_bytes},
                 {"tar_sha256", s.tar_sha256}, {"index", s.index},
                 {"index_bytes", s.index_bytes}, {"index_sha256", s.index_sha256},
                 {"first_sample", s.first_sample}, {"samples", s.samples}};
    out += (i ? ",\n  " : "\n  ") + e.dump();
  }
  return out + "\n ]}\n";
}

PackDescription parse_pack(const std::string& text_in, const std::string& source,
                           bool partial) {
  const json j = json::parse(text_in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) bad(source, "is not JSON");
  if (!j.contains("format") || j["format"] != "mploader-pack") {
    bad(source, "has no \"format\": \"mploader-pack\"");
  }
  if (!j.contains("version") || j["version"] != 1) {
    bad(source, "is of a version this mploader cannot read (it reads version 1)");
  }
  PackDescription pack;
  pack.samples = whole(j, "samples", source, "the pack");
  const int64_t digits = whole(j, "key_digits", source, "the pack");
  if (digits < 1 || digits > 19) bad(source, "has key_digits " + std::to_string(digits) + ", not 1 to 19");
  pack.key_digits = static_cast<int>(digits);
  pack.fields = parse_fields(j, source);
  if (j.contains("settings") && j["settings"].is_object()) pack.settings = j["settings"].dump();
  const auto shards = j.find("shards");
  if (shards == j.end() || !shards->is_array()) bad(source, "has no \"shards\" list");
  int64_t next = 0;
  for (size_t i = 0; i < shards->size(); ++i) {
    PackedShard s = parse_shard((*shards)[i], source, i);
    if (s.first_sample != next || s.samples < 1 || s.samples > (int64_t{1} << 40)) {
      bad(source, "has shard " + std::to_string(i) + " starting at sample " +
                      std::to_string(s.first_sample) + " with " + std::to_string(s.samples) +
                      " samples where sample " + std::to_string(next) + " comes next");
    }
    const uint64_t want = kIndexHeaderBytes + static_cast<uint64_t>(s.samples) *
                                                  index_record_bytes(pack.fields.size());
    if (static_cast<uint64_t>(s.index_bytes) != want) {
      bad(source, "gives index " + in_quotes(s.index) + " " + std::to_string(s.index_bytes) +
                      " bytes where " + std::to_string(s.samples) + " samples of " +
                      std::to_string(pack.fields.size()) + " fields take " + std::to_string(want));
    }
    next += s.samples;
    pack.shards.push_back(std::move(s));
  }
  if (!partial && next != pack.samples) {
    bad(source, "says " + std::to_string(pack.samples) + " samples but its shards hold " +
                    std::to_string(next));
  }
  return pack;
}

size_t shard_of(const PackDescription& pack, int64_t index) {
  const auto it = std::upper_bound(
      pack.shards.begin(), pack.shards.end(), index,
      [](int64_t i, const PackedShard& s) { return i < s.first_sample; });
  return static_cast<size_t>(it - pack.shards.begin()) - 1;
}

std::string index_header(size_t fields, int64_t first_sample, int64_t samples,
                         int64_t tar_bytes) {
  std::string h(kIndexHeaderBytes, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(h.data());
  std::memcpy(p, kIndexMagic, 8);
  put_u64(p + 8, fields);
  put_u64(p + 16, static_cast<uint64_t>(first_sample));
  put_u64(p + 24, static_cast<uint64_t>(samples));
  put_u64(p + 32, static_cast<uint64_t>(tar_bytes));
  return h;
}

void check_index_header(const uint8_t* h, size_t fields, const PackedShard& shard,
                        const std::string& name) {
  auto differs = [&](const std::string& what, uint64_t got, uint64_t want,
                     const std::string& whose = "The index belongs") {
    throw Error(mploader::detail::message("PackedShards", "the index " + in_quotes(name) + " says " +
                                                    what + " " + std::to_string(got) +
                                                    " where the pack says " +
                                                    std::to_string(want),
                                whose + " to another pack: copy the pack's files "
                                "together, or pack the data again"));
  };
  if (std::memcmp(h, kIndexMagic, 8) != 0) {
    throw Error(mploader::detail::message("PackedShards", in_quotes(name) + " is not a pack index (no " +
                                                    "\"MPLPIDX1\" at its start)",
                                "Pack the data again with mploader-pack"));
  }
  if (get_u64(h + 8) != fields) differs("fields", get_u64(h + 8), fields);
  const auto first = static_cast<uint64_t>(shard.first_sample);
  if (get_u64(h + 16) != first) differs("first sample", get_u64(h + 16), first);
  const auto samples = static_cast<uint64_t>(shard.samples);
  if (get_u64(h + 24) != samples) differs("samples", get_u64(h + 24), samples);
  const auto bytes = static_cast<uint64_t>(shard.tar_bytes);
  // Only the tar's size differing: the index or the description may be the foreign one.
  if (get_u64(h + 32) != bytes) {
    differs("tar bytes", get_u64(h + 32), bytes, "The index or the pack's description belongs");
  }
}

void append_record(std::string& out, const std::vector<MemberSpan>& spans,
                   const std::array<unsigned char, 32>& sha256) {
  uint8_t buf[16];
  for (const MemberSpan& s : spans) {
    put_u64(buf, s.offset);
    put_u64(buf + 8, s.size);
    out.append(reinterpret_cast<const char*>(buf), 16);
  }
  out.append(reinterpret_cast<const char*>(sha256.data()), sha256.size());
}

void read_record(const uint8_t* record, size_t fields, MemberSpan* spans,
                 unsigned char* sha256) {
  for (size_t f = 0; f < fields; ++f) {
    spans[f].offset = get_u64(record + 16 * f);
    spans[f].size = get_u64(record + 16 * f + 8);
  }
  std::memcpy(sha256, record + 16 * fields, 32);
}

std::string tar_header(const std::string& name, uint64_t size) {
  if (name.size() > 100) {
    throw OptionError("field", "the member name " + in_quotes(name) + " is " +
                                   std::to_string(name.size()) + " bytes, over the 100 a tar "
                                   "header holds: give the field a shorter name");
  }
  char h[512] = {};
  std::memcpy(h, name.data(), name.size());
  std::snprintf(h + 100, 8, "%07o", 0644);
  std::snprintf(h + 108, 8, "%07o", 0);
  std::snprintf(h + 116, 8, "%07o", 0);
  if (size < (uint64_t{1} << 33)) {
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(size));
  } else {  // GNU's base-256 size for a member of 8 GiB or more
    h[124] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<char>(size >> (8 * i));
  }
  std::snprintf(h + 136, 12, "%011o", 0);
  h[156] = '0';
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 8, "%06o", sum);  // six digits, a NUL, and the space left in place
  return std::string(h, 512);
}

std::string shard_tar_name(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard-%06lld.tar", static_cast<long long>(n));
  return buf;
}

std::string shard_index_name(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard-%06lld.idx", static_cast<long long>(n));
  return buf;
}

std::string member_extension(PackedKind kind, const uint8_t* data, size_t size) {
  switch (kind) {
    case PackedKind::kImage:
      return size >= 4 && data[0] == 0x89 && data[1] == 'P' && data[2] == 'N' && data[3] == 'G'
                 ? "png"
                 : "jpg";
    case PackedKind::kInt: return "cls";
    case PackedKind::kNpy: return "npy";
    case PackedKind::kText: return "txt";
  }
  return "bin";
}

}  // namespace mploader::shards::detail
