// shards/: the packed layout that mploader-pack writes and PackedShards reads. A pack is a
// folder (or the same files under a URL):
//
//   mploader-pack.json      the fields, the samples, and each shard's tar and index with their
//                           sizes and SHA-256s
//   shard-000000.tar, ...   ustar tars in the WebDataset convention: sample p's members are
//                           "<key>.<field>.<ext>", its key p in key_digits digits, every member
//                           with the same header metadata, so a pack is byte-identical again
//   shard-000000.idx, ...   the tar's index: a 64-byte header, then one fixed-size record per
//                           sample: for each field the offset and size of its member's data in
//                           the tar, then the SHA-256 of those data one after another
//   mploader-manifest.json  the tars for TarShards (a stream of the same samples)
//
// Numbers in the index are little-endian. Nothing here links libtorch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mploader::shards::detail {

// How a field's member holds its value, and so how it is read back.
enum class PackedKind {
  kImage,  // a JPEG or PNG file (".jpg" or ".png")
  kInt,    // an integer as decimal text (".cls"): an int64 scalar
  kNpy,    // a .npy file (".npy"): the tensor
  kText,   // bytes (".txt"): a text field
};

struct PackedField {
  std::string name;
  PackedKind kind = PackedKind::kNpy;
};

// "image", "int", "npy", "text"; and back (false for another word).
const char* kind_name(PackedKind kind);
bool kind_of(const std::string& word, PackedKind& kind);

struct PackedShard {
  std::string tar;    // its name, relative to the pack's folder
  int64_t tar_bytes = 0;
  std::string tar_sha256;
  std::string index;  // the index's name
  int64_t index_bytes = 0;
  std::string index_sha256;
  int64_t first_sample = 0;  // the position of its first sample in the pack
  int64_t samples = 0;
};

struct PackDescription {
  int64_t samples = 0;
  int key_digits = 9;
  std::vector<PackedField> fields;
  std::vector<PackedShard> shards;
  // What was packed and how (the command's settings as a JSON object's text): a resumed pack
  // must have the same, and a reader shows it.
  std::string settings = "{}";
};

// The description's text (one shard per line, so that it diffs well).
std::string pack_text(const PackDescription& pack);
// Parses a description; throws OptionError naming `source` and what is wrong (not JSON, a
// missing or negative number, shards that do not follow each other, a field listed twice, and
// unless `partial` (a progress file), shards that do not hold every sample).
PackDescription parse_pack(const std::string& text, const std::string& source,
                           bool partial = false);

// The shard (0-based) that holds sample `index`, in [0, samples): found from the shards' first
// samples, which the parser checked follow each other.
size_t shard_of(const PackDescription& pack, int64_t index);

inline constexpr size_t kIndexHeaderBytes = 64;
inline constexpr const char kIndexMagic[9] = "MPLPIDX1";

struct MemberSpan {
  uint64_t offset = 0;  // of the member's data in the tar
  uint64_t size = 0;
};

// One index record's bytes: 16 per field, then the 32 of the SHA-256.
inline size_t index_record_bytes(size_t fields) { return fields * 16 + 32; }

// The index's header: the magic, the field count, the first sample, the samples, the tar's size.
std::string index_header(size_t fields, int64_t first_sample, int64_t samples,
                         int64_t tar_bytes);
// Checks `header` (kIndexHeaderBytes) against what the description says of the shard; throws
// Error naming `name` and the difference.
void check_index_header(const uint8_t* header, size_t fields, const PackedShard& shard,
                        const std::string& name);

void append_record(std::string& out, const std::vector<MemberSpan>& spans,
                   const std::array<unsigned char, 32>& sha256);
// Decodes one record into `spans` (fields of them) and `sha256`.
void read_record(const uint8_t* record, size_t fields, MemberSpan* spans, unsigned char* sha256);

// A 512-byte ustar header for a regular file `name` of `size` bytes: mode 0644, owner 0/0,
// modification time 0. Throws OptionError("field", ...) for a name over 100 bytes.
std::string tar_header(const std::string& name, uint64_t size);
// Zero bytes that pad a member of `size` bytes to the next 512-byte block.
inline uint64_t tar_padding(uint64_t size) { return (512 - size % 512) % 512; }
inline constexpr uint64_t kTarEndBytes = 1024;  // two zero blocks end a tar

// Shard `n`'s tar and index names.
std::string shard_tar_name(int64_t n);
std::string shard_index_name(int64_t n);

// The member extension of `kind` for `data` (an image's by its first bytes: "jpg" or "png").
std::string member_extension(PackedKind kind, const uint8_t* data, size_t size);

}  // namespace mploader::shards::detail
