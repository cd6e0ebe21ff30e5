// shards/: PackReader, one process's reads of a pack (PackedShards): records out of the shards'
// indexes and members' bytes out of their tars, from local files by offset, or by URL as
// merged ranged requests or through the shard cache. Nothing here links libtorch.
#pragma once

#include "shards/pack_format.h"

#include "ipc/unique_fd.h"
#include "remote/shard_cache.h"

#include <mploader/remote/remote.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mploader::shards::detail {

// One sample's member data, one after another, and where each member is in `bytes`.
struct SampleData {
  std::vector<uint8_t> bytes;
  std::vector<MemberSpan> members;  // offsets into `bytes`
};

struct PackReadOptions {
  bool remote = false;        // shard names are relative to a URL
  bool verify = false;        // check each sample's SHA-256 (always when remote)
  bool whole_shards = false;  // remote: through the shard cache instead of ranges
  int64_t merge_gap_bytes = int64_t{1} << 20;
  int64_t max_request_bytes = int64_t{64} << 20;
  int max_held_shards = 4;
  remote::RemoteOptions remote_options;
};

class PackReader {
 public:
  // `base`: the pack's folder (a path or a URL without the trailing '/').
  PackReader(const PackDescription& pack, std::string base, PackReadOptions options);
  ~PackReader();

  // Sample `index`'s members; throws Error naming the shard and the sample. A shard's local
  // index is checked against its SHA-256 the first time this reader opens it.
  SampleData read(int64_t index);
  // Remote ranged reads: fetches the samples of `indices` not yet fetched, merged by shard.
  void prepare(const int64_t* indices, size_t count);

  size_t shard_of(int64_t index) const { return detail::shard_of(pack_, index); }
  int64_t range_requests() const { return range_requests_; }
  int64_t range_bytes() const { return range_bytes_; }

 private:
  struct OpenFiles;  // a shard's tar and index descriptors (and cache leases)
  OpenFiles& files(size_t shard, bool need_tar);
  void read_record(size_t shard, int64_t row, MemberSpan* spans, unsigned char* sha256);
  void check(const SampleData& data, const unsigned char* sha256, size_t shard, int64_t index);
  std::string where(size_t shard) const;
  std::string url_of(const std::string& name) const { return base_ + "/" + name; }
  void fetch_ranges(size_t shard, std::vector<int64_t>& indices);
  void read_range(size_t shard, uint64_t offset, uint64_t length, uint8_t* out);
  ipc::UniqueFd cached(const std::string& name, int64_t bytes, const std::string& sha256,
                       std::unique_ptr<remote::detail::CachedShard>& lease);

  const PackDescription& pack_;
  std::string base_;
  PackReadOptions options_;
  size_t record_bytes_;
  std::vector<uint8_t> record_;  // one index record, read into again for each sample
  std::vector<std::unique_ptr<OpenFiles>> open_;  // the most recently used last
  std::vector<bool> index_checked_;  // per shard: the local index's SHA-256 was checked
  std::map<int64_t, SampleData> fetched_;  // ranged reads waiting for their read()
  std::unique_ptr<remote::Transport> transport_;
  std::unique_ptr<remote::detail::ShardCache> cache_;
  int64_t range_requests_ = 0;
  int64_t range_bytes_ = 0;
};

}  // namespace mploader::shards::detail
