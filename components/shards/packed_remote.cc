// PackReader's reads of a pack by URL (packed_reader.h): indexes (and, in whole-shard mode,
// tars) through the machine's shard cache; samples as byte ranges merged into few requests,
// retried and resumed, each sample then checked against its SHA-256.
#include "shards/packed_reader.h"
#include "shards/text.h"

#include <mploader/errors.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fcntl.h>

namespace mploader::shards::detail {
namespace {

// One request: the byte range [begin, end) of a tar, and the samples inside it.
struct RangeRequest {
  uint64_t begin = 0, end = 0;
  std::vector<std::pair<int64_t, std::vector<MemberSpan>>> samples;  // index, spans in the tar
  std::vector<std::array<unsigned char, 32>> digests;
};

}  // namespace

ipc::UniqueFd PackReader::cached(const std::string& name, int64_t bytes,
                                 const std::string& sha256,
                                 std::unique_ptr<remote::detail::CachedShard>& lease) {
  const std::string url = url_of(name);
  if (!transport_) transport_ = remote::make_transport(url, options_.remote_options);
  if (!cache_) {
    cache_ = std::make_unique<remote::detail::ShardCache>(
        remote::detail::resolve_cache_config(options_.remote_options));
  }
  lease = cache_->acquire(url, remote::detail::ExpectedObject{bytes, sha256, ""}, *transport_,
                          options_.remote_options);
  ipc::UniqueFd fd(::open(lease->path().c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    throw Error(mploader::detail::message(
        "PackedShards", "cannot open the cached copy " + in_quotes(lease->path()) + " of " +
                            in_quotes(url) + " (" + std::strerror(errno) + ")",
        "Check the shard cache's folder (RemoteOptions::cache_dir)"));
  }
  return fd;
}

void PackReader::prepare(const int64_t* indices, size_t count) {
  if (!options_.remote || options_.whole_shards) return;
  fetched_.clear();  // samples a failed batch left behind
  std::map<size_t, std::vector<int64_t>> by_shard;
  for (size_t i = 0; i < count; ++i) {
    if (indices[i] >= 0 && indices[i] < pack_.samples) {
      by_shard[shard_of(indices[i])].push_back(indices[i]);
    }
  }
  for (auto& [shard, wanted] : by_shard) fetch_ranges(shard, wanted);
}

void PackReader::fetch_ranges(size_t shard, std::vector<int64_t>& indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  const size_t fields = pack_.fields.size();
  std::vector<RangeRequest> requests;
  for (int64_t index : indices) {
    std::vector<MemberSpan> spans(fields);
    std::array<unsigned char, 32> digest{};
    read_record(shard, index - pack_.shards[shard].first_sample, spans.data(), digest.data());
    uint64_t begin = UINT64_MAX, end = 0;
    for (const MemberSpan& s : spans) {
      begin = std::min(begin, s.offset);
      end = std::max(end, s.offset + s.size);
    }
    if (begin > end) begin = end;  // no member has data
    const bool joins = !requests.empty() &&
                       begin <= requests.back().end + options_.merge_gap_bytes &&
                       end - requests.back().begin <= static_cast<uint64_t>(options_.max_request_bytes);
    if (!joins) requests.push_back(RangeRequest{begin, end, {}, {}});
    RangeRequest& r = requests.back();
    r.end = std::max(r.end, end);
    r.samples.emplace_back(index, std::move(spans));
    r.digests.push_back(digest);
  }
  std::vector<uint8_t> body;
  for (const RangeRequest& r : requests) {
    body.resize(r.end - r.begin);
    read_range(shard, r.begin, r.end - r.begin, body.data());
    for (size_t k = 0; k < r.samples.size(); ++k) {
      SampleData data;
      uint64_t at = 0;
      for (const MemberSpan& s : r.samples[k].second) {
        data.bytes.insert(data.bytes.end(), body.begin() + static_cast<ptrdiff_t>(s.offset - r.begin),
                          body.begin() + static_cast<ptrdiff_t>(s.offset - r.begin + s.size));
        data.members.push_back(MemberSpan{at, s.size});
        at += s.size;
      }
      check(data, r.digests[k].data(), shard, r.samples[k].first);
      fetched_[r.samples[k].first] = std::move(data);
    }
  }
}

void PackReader::read_range(size_t shard, uint64_t offset, uint64_t length, uint8_t* out) {
  const PackedShard& s = pack_.shards[shard];
  const std::string url = url_of(s.tar);
  if (!transport_) transport_ = remote::make_transport(url, options_.remote_options);
  uint64_t done = 0;
  for (int attempt = 0; done < length; ++attempt) {
    remote::ReadRequest request;
    request.url = url;
    request.offset = static_cast<int64_t>(offset + done);
    request.length = static_cast<int64_t>(length - done);
    try {
      ++range_requests_;
      transport_->read(
          request,
          [&](const remote::ObjectInfo& info) {
            if (info.bytes >= 0 && info.bytes != s.tar_bytes) {
              throw Error(mploader::detail::message(
                  "PackedShards", in_quotes(url) + " is " + std::to_string(info.bytes) +
                                      " bytes on the server where the pack says " +
                                      std::to_string(s.tar_bytes) + ": it changed since the "
                                      "pack was written",
                  "Upload the pack's files again together, or pack the data again"));
            }
          },
          [&](const char* data, size_t n) {
            const size_t take = static_cast<size_t>(std::min<uint64_t>(n, length - done));
            std::memcpy(out + done, data, take);
            done += take;
            range_bytes_ += static_cast<int64_t>(take);
          });
    } catch (const remote::TransportError& e) {
      if (!e.transient() || attempt >= options_.remote_options.max_retries) {
        throw Error(mploader::detail::message(
            "PackedShards", "reading bytes " + std::to_string(offset) + "+" +
                                std::to_string(length) + " of " + in_quotes(url) +
                                " failed after " + std::to_string(attempt + 1) + " tries: " +
                                e.what(),
            "Check the store and the credentials; RemoteOptions::max_retries sets the tries"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 5)));
      continue;
    }
    if (done < length) {
      throw Error(mploader::detail::message(
          "PackedShards", in_quotes(url) + " sent " + std::to_string(done) + " of the " +
                              std::to_string(length) + " bytes asked for at offset " +
                              std::to_string(offset),
          "The object is shorter than the pack says: upload the pack again"));
    }
  }
}

}  // namespace mploader::shards::detail
