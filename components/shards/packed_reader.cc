// PackReader (packed_reader.h): local reads by offset, and the parts every read shares. The
// remote reads are in packed_remote.cc.
#include "shards/packed_reader.h"
#include "shards/text.h"

#include "remote/sha256.h"

#include <mploader/errors.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mploader::shards::detail {

// A process keeps this many shards' files open; more are closed, least recently used first, so
// that a pack of thousands of shards never runs out of descriptors.
constexpr size_t kMaxOpenShards = 16;

struct PackReader::OpenFiles {
  size_t shard = 0;
  ipc::UniqueFd index;
  ipc::UniqueFd tar;  // invalid until a member is read from the file (not remote ranges)
  std::unique_ptr<remote::detail::CachedShard> index_lease, tar_lease;
};

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& fix) {
  throw Error(mploader::detail::message("PackedShards", what, fix));
}

void pread_all(int fd, uint8_t* out, uint64_t size, uint64_t offset, const std::string& name) {
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("reading " + in_quotes(name) + " failed (" + std::strerror(errno) + ")",
                    "Check the file system");
    if (n == 0) {
      fail(in_quotes(name) + " ends at byte " + std::to_string(offset + done) + " where " +
               std::to_string(offset + size) + " were needed: it was cut short or replaced",
           "Copy the pack again, or pack the data again");
    }
    done += static_cast<uint64_t>(n);
  }
}

ipc::UniqueFd open_checked(const std::string& path, int64_t bytes) {
  ipc::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    fail("cannot open " + in_quotes(path) + " (" + std::strerror(errno) + ")",
         "Copy every file of the pack, or pack the data again");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size != bytes) {
    fail(in_quotes(path) + " is " + std::to_string(static_cast<int64_t>(st.st_size)) +
             " bytes where the pack says " + std::to_string(bytes) + ": it was cut short or "
             "changed since the pack was written",
         "Copy the pack again, or pack the data again");
  }
  return fd;
}

// A local index's SHA-256 against the description's: an index of another pack of the same
// shape passes every header check but puts other samples' offsets and digests in the records.
void check_index_digest(int fd, const PackedShard& s, const std::string& path) {
  remote::detail::Sha256 hash;
  std::vector<uint8_t> chunk(std::min<uint64_t>(static_cast<uint64_t>(s.index_bytes), 1 << 20));
  for (uint64_t at = 0; at < static_cast<uint64_t>(s.index_bytes);) {
    const uint64_t n = std::min<uint64_t>(chunk.size(), static_cast<uint64_t>(s.index_bytes) - at);
    pread_all(fd, chunk.data(), n, at, path);
    hash.update(chunk.data(), n);
    at += n;
  }
  const std::string found = hash.hex();
  if (found != s.index_sha256) {
    fail("the index " + in_quotes(path) + " has the SHA-256 " + found + " where the pack's "
             "description says " + s.index_sha256 + ": it is another pack's index, or it "
             "changed since the pack was written",
         "Copy the pack's files again together (each index with its tar and "
         "mploader-pack.json), or pack the data again");
  }
}

}  // namespace

PackReader::PackReader(const PackDescription& pack, std::string base, PackReadOptions options)
    : pack_(pack), base_(std::move(base)), options_(std::move(options)),
      record_bytes_(index_record_bytes(pack.fields.size())), record_(record_bytes_),
      index_checked_(pack.shards.size(), false) {
  if (options_.remote) options_.verify = true;
}

PackReader::~PackReader() = default;

std::string PackReader::where(size_t shard) const {
  return options_.remote ? url_of(pack_.shards[shard].tar)
                         : base_ + "/" + pack_.shards[shard].tar;
}

PackReader::OpenFiles& PackReader::files(size_t shard, bool need_tar) {
  auto it = std::find_if(open_.begin(), open_.end(),
                         [&](const auto& f) { return f->shard == shard; });
  if (it != open_.end()) {
    std::rotate(it, it + 1, open_.end());  // now the most recently used
  } else {
    if (open_.size() >= std::max<size_t>(kMaxOpenShards, options_.max_held_shards)) {
      open_.erase(open_.begin());
    }
    auto f = std::make_unique<OpenFiles>();
    f->shard = shard;
    const PackedShard& s = pack_.shards[shard];
    f->index = options_.remote ? cached(s.index, s.index_bytes, s.index_sha256, f->index_lease)
                               : open_checked(base_ + "/" + s.index, s.index_bytes);
    uint8_t header[kIndexHeaderBytes];
    pread_all(f->index.get(), header, kIndexHeaderBytes, 0, s.index);
    check_index_header(header, pack_.fields.size(), s, s.index);
    // Once per process (the cache checked a remote one when it was downloaded).
    if (!options_.remote && !index_checked_[shard]) {
      check_index_digest(f->index.get(), s, base_ + "/" + s.index);
      index_checked_[shard] = true;
    }
    open_.push_back(std::move(f));
  }
  OpenFiles& f = *open_.back();
  if (need_tar && !f.tar.valid()) {
    // Whole shards held in the cache are leases that keep them from eviction: at most
    // max_held_shards, the least recently used let go first.
    size_t held = 0;
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      if ((*it)->tar.valid() && ++held >= static_cast<size_t>(options_.max_held_shards)) {
        (*it)->tar = ipc::UniqueFd();
        (*it)->tar_lease.reset();
      }
    }
    const PackedShard& s = pack_.shards[shard];
    f.tar = options_.remote ? cached(s.tar, s.tar_bytes, s.tar_sha256, f.tar_lease)
                            : open_checked(base_ + "/" + s.tar, s.tar_bytes);
  }
  return f;
}

void PackReader::read_record(size_t shard, int64_t row, MemberSpan* spans,
                             unsigned char* sha256) {
  const PackedShard& s = pack_.shards[shard];
  pread_all(files(shard, false).index.get(), record_.data(), record_bytes_,
            kIndexHeaderBytes + static_cast<uint64_t>(row) * record_bytes_, s.index);
  detail::read_record(record_.data(), pack_.fields.size(), spans, sha256);
  for (size_t f = 0; f < pack_.fields.size(); ++f) {
    if (spans[f].offset + spans[f].size > static_cast<uint64_t>(s.tar_bytes)) {
      fail("the index " + in_quotes(s.index) + " puts sample " +
               std::to_string(s.first_sample + row) + "'s field " +
               in_quotes(pack_.fields[f].name) + " at bytes " +
               std::to_string(spans[f].offset) + "+" + std::to_string(spans[f].size) +
               ", past the tar's " + std::to_string(s.tar_bytes),
           "The index is damaged: copy the pack again, or pack the data again");
    }
  }
}

void PackReader::check(const SampleData& data, const unsigned char* sha256, size_t shard,
                       int64_t index) {
  remote::detail::Sha256 hash;
  hash.update(data.bytes.data(), data.bytes.size());
  if (std::memcmp(hash.digest().data(), sha256, 32) != 0) {
    fail("sample " + std::to_string(index) + "'s bytes in " + in_quotes(where(shard)) +
             " do not match the SHA-256 its index records: the tar was damaged or changed, or "
             "the server sent other bytes",
         "Copy the pack again, or pack the data again");
  }
}

SampleData PackReader::read(int64_t index) {
  if (index < 0 || index >= pack_.samples) {
    throw OptionError("index", "sample " + std::to_string(index) + " is outside the pack's " +
                                   std::to_string(pack_.samples) + " samples");
  }
  if (auto it = fetched_.find(index); it != fetched_.end()) {
    SampleData data = std::move(it->second);
    fetched_.erase(it);
    return data;
  }
  const size_t shard = shard_of(index);
  if (options_.remote && !options_.whole_shards) {  // not prepared with its batch: alone
    std::vector<int64_t> one{index};
    fetch_ranges(shard, one);
    return read(index);
  }
  const size_t fields = pack_.fields.size();
  std::vector<MemberSpan> spans(fields);
  unsigned char sha256[32];
  read_record(shard, index - pack_.shards[shard].first_sample, spans.data(), sha256);
  SampleData data;
  uint64_t total = 0;
  for (const MemberSpan& s : spans) total += s.size;
  data.bytes.resize(total);
  uint64_t at = 0;
  const int fd = files(shard, true).tar.get();
  for (const MemberSpan& s : spans) {
    pread_all(fd, data.bytes.data() + at, s.size, s.offset, pack_.shards[shard].tar);
    data.members.push_back(MemberSpan{at, s.size});
    at += s.size;
  }
  if (options_.verify) check(data, sha256, shard, index);
  return data;
}

}  // namespace mploader::shards::detail
