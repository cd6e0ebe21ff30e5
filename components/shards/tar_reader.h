// shards/: tar shards in the WebDataset convention (mploader::shards), read with libarchive
#pragma once

#include <mploader/shards/tar_shards.h>

#include <cstdint>
#include <string>
#include <vector>

struct archive;

namespace mploader::shards::detail {

/// One member of a sample: its path in the tar, its extension and, when read, its bytes.
struct Member {
  std::string name;
  std::string ext;
  std::vector<uint8_t> bytes;
};

/// The members of one sample, in tar order.
struct RawSample {
  std::string key;
  std::vector<Member> members;
  int64_t bytes = 0;  // of all members' data together
};

/// Splits a member path into its key and extension (the WebDataset convention, see
/// tar_shards.h); false when its base name has no '.' (or starts with it), which is no member.
bool split_member_name(const std::string& path, std::string& key, std::string& ext);

/// Reads a tar front to back, one sample at a time, reading member data or skipping it.
/// Contract: every failure throws mploader::Error whose text names the tar and, for a
/// member, the member, with libarchive's message; the reader is then unusable (the caller
/// drops it). Not thread-safe; owns its file descriptor (never used across a fork).
class TarReader {
 public:
  /// Opens `path` (stat first, for a clear message when it is missing).
  explicit TarReader(std::string path);
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  /// Moves past the next sample: reads its members into `out`, or skips their data when `out`
  /// is null. False at the end of the tar.
  bool next(RawSample* out);
  /// The index in the tar of the sample next() moves past.
  int64_t position() const { return position_; }
  /// The file's size and modification time when it was opened.
  int64_t file_bytes() const { return file_bytes_; }
  int64_t mtime_ns() const { return mtime_ns_; }  ///< in nanoseconds since the epoch
  const std::string& path() const { return path_; }  ///< The tar's path.

 private:
  // Reads the next member's header into pending_; false at the end. `samples_before`: the
  // samples complete before it, for messages.
  bool next_member(int64_t samples_before);
  void check_end_blocks(int64_t samples_before) const;  // throws for a tar without them
  void read_pending(Member& out);
  void skip_pending();
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  archive* archive_ = nullptr;
  int64_t file_bytes_ = 0;
  int64_t mtime_ns_ = 0;
  bool compressed_ = false;  // a filter (gzip, ...) sits under the tar: no size check
  int64_t position_ = 0;
  bool at_end_ = false;
  // The member whose header was read but whose data was not: the first of the next sample.
  bool has_pending_ = false;
  std::string pending_key_;
  Member pending_;
  int64_t pending_size_ = 0;
};

/// Reads every header of `path` (no member data) and counts its samples. Throws OptionError
/// naming the file for a missing or unreadable one, one that is not a tar, a tar cut short
/// (inside a member, or on a member boundary: no end blocks), a damaged one (a member's size
/// that does not match its data) and a sample with two members of one extension.
ShardScan scan_shard(const std::string& path);

}  // namespace mploader::shards::detail
