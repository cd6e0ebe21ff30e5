// SampleSource: positioned readers and the read-ahead cache (sample_source.h).
#include "shards/sample_source.h"
#include "shards/text.h"
#include "util/file_stat.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace mploader::shards::detail {
namespace {


const char* const kRebuild =
    "a tar must stay as it is while a Loader reads it: build the dataset (and its Loader) "
    "again to count it anew";

}  // namespace

SampleSource::SampleSource(const std::vector<std::string>& paths,
                           const std::vector<ShardScan>& scans, int64_t read_ahead,
                           int64_t read_ahead_bytes, const remote::RemoteOptions& remote)
    : paths_(paths),
      scans_(scans),
      read_ahead_(read_ahead),
      read_ahead_bytes_(read_ahead_bytes),
      owner_(::getpid()),
      remote_(remote) {}

SampleSource::~SampleSource() = default;

void SampleSource::adopt_process() {
  // A fork copies the parent's readers; their descriptors share the parent's file offsets, so
  // reading through them would move the parent's position. Closing the copies is harmless.
  if (::getpid() == owner_) return;
  // The prefetcher's thread stayed in the parent; destroying the copy would join a thread
  // this process does not have. Its memory is left as it is.
  (void)prefetcher_.release();
  open_.clear();
  cache_.clear();
  order_.clear();
  cached_bytes_ = 0;
  opens_ = 0;
  owner_ = ::getpid();
}

void SampleSource::changed(const TarReader& reader, size_t shard) const {
  if (remote::is_url(paths_[shard])) {
    throw ShardChanged(
        in_quotes(paths_[shard]) + " ends after " + std::to_string(reader.position()) +
        " samples, but its manifest counts " + std::to_string(scans_.at(shard).num_samples) +
        ": the manifest does not describe the shard as it is; write it again "
        "(mploader-manifest) and build the dataset again");
  }
  throw ShardChanged(
      in_quotes(reader.path()) + " ends after " + std::to_string(reader.position()) +
      " samples, but " + std::to_string(scans_.at(shard).num_samples) +
      " were counted when the dataset was built: it changed since the Loader counted it; " +
      kRebuild);
}

void SampleSource::check_unchanged(size_t shard) const {
  const std::string& path = paths_[shard];
  // A URL's copy in the cache was checked when it arrived, and its lease keeps it as it is.
  if (remote::is_url(path)) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ShardChanged(in_quotes(path) + " cannot be opened (" + std::strerror(errno) +
                             "): it was deleted, renamed or made unreadable after the dataset "
                             "counted its samples; put it back, or build the dataset again "
                             "without it");
  }
  const ShardScan& scan = scans_[shard];
  const int64_t bytes = static_cast<int64_t>(st.st_size);
  const int64_t mtime = mploader::detail::mtime_ns(st);
  if (bytes != scan.file_bytes || mtime != scan.mtime_ns) {
    throw ShardChanged(
        in_quotes(path) + " has " + std::to_string(bytes) + " bytes, modified at " +
        std::to_string(mtime) + " ns; it had " + std::to_string(scan.file_bytes) +
        " bytes, modified at " + std::to_string(scan.mtime_ns) + " ns, and " +
        std::to_string(scan.num_samples) + " samples when the dataset counted them: it " +
        "changed since the Loader counted it; " + kRebuild);
  }
}

SampleSource::Open SampleSource::open_checked(size_t shard) {
  if (remote::is_url(paths_[shard]) || remote_.cache_local_paths) return open_cached(shard);
  check_unchanged(shard);
  auto reader = std::make_unique<TarReader>(paths_[shard]);
  // Changed between the check and the open: the reader's own look at the file says so.
  const ShardScan& scan = scans_[shard];
  if (reader->file_bytes() != scan.file_bytes || reader->mtime_ns() != scan.mtime_ns) {
    check_unchanged(shard);
  }
  return Open{shard, nullptr, std::move(reader), 0};
}

remote::detail::PrefetchItem SampleSource::cache_entry_of(size_t shard) const {
  const ShardScan& scan = scans_[shard];
  remote::detail::PrefetchItem entry{paths_[shard], {scan.file_bytes, scan.sha256, ""}};
  if (!remote::is_url(entry.url)) {  // a local tar in front of which the cache sits
    entry.url = "file://" + std::filesystem::absolute(entry.url).lexically_normal().string();
    entry.expect.version = std::to_string(scan.mtime_ns);
  }
  return entry;
}

std::unique_ptr<remote::detail::CachedShard> SampleSource::lease_of(
    const remote::detail::PrefetchItem& entry) {
  if (prefetcher_) {
    if (auto lease = prefetcher_->take(entry.url)) return lease;
  }
  if (!shard_cache_) {
    shard_cache_ = std::make_unique<remote::detail::ShardCache>(
        remote::detail::resolve_cache_config(remote_));
  }
  const std::string scheme = entry.url.substr(0, entry.url.find("://"));
  std::unique_ptr<remote::Transport>& transport = transports_[scheme];
  if (!transport) transport = remote::make_transport(entry.url, remote_);
  try {
    return shard_cache_->acquire(entry.url, entry.expect, *transport, remote_);
  } catch (const remote::detail::CacheError&) {
    if (!prefetcher_) throw;
    prefetcher_->release_all();  // shards fetched ahead give way to the one needed now
    return shard_cache_->acquire(entry.url, entry.expect, *transport, remote_);
  }
}

SampleSource::Open SampleSource::open_cached(size_t shard) {
  if (!remote::is_url(paths_[shard])) check_unchanged(shard);
  const remote::detail::PrefetchItem entry = cache_entry_of(shard);
  auto lease = lease_of(entry);
  auto reader = std::make_unique<TarReader>(lease->path());
  const ShardScan& scan = scans_[shard];
  if (reader->file_bytes() != scan.file_bytes) {
    throw ShardChanged("the cached copy of " + in_quotes(entry.url) + " (" +
                       in_quotes(lease->path()) + ") has " +
                       std::to_string(reader->file_bytes()) + " bytes, but the manifest says " +
                       std::to_string(scan.file_bytes) + ": the cache folder was changed by "
                       "hand; delete that file, and it is downloaded again");
  }
  return Open{shard, std::move(lease), std::move(reader), 0};
}

void SampleSource::prefetch(const std::vector<size_t>& upcoming) {
  adopt_process();
  if (remote_.prefetch_bytes <= 0) return;
  std::vector<remote::detail::PrefetchItem> items;
  for (size_t shard : upcoming) {
    if (shard >= paths_.size()) continue;
    if (!remote::is_url(paths_[shard]) && !remote_.cache_local_paths) continue;
    items.push_back(cache_entry_of(shard));
  }
  if (items.empty() && !prefetcher_) return;
  if (!prefetcher_) {
    prefetcher_ = std::make_unique<remote::detail::ShardPrefetcher>(
        remote::detail::resolve_cache_config(remote_), remote_, remote_.prefetch_bytes);
  }
  prefetcher_->want(std::move(items));
}

TarReader& SampleSource::reader_at_or_before(size_t shard, int64_t sample) {
  auto it = std::find_if(open_.begin(), open_.end(),
                         [&](const Open& o) { return o.shard == shard; });
  if (it != open_.end() && it->reader->position() <= sample) {
    it->last_use = ++clock_;
    return *it->reader;
  }
  if (it != open_.end()) open_.erase(it);  // behind its position and not kept: read again
  if (open_.size() >= kMaxOpen) {
    open_.erase(std::min_element(open_.begin(), open_.end(), [](const Open& a, const Open& b) {
      return a.last_use < b.last_use;
    }));
  }
  open_.push_back(open_checked(shard));
  open_.back().last_use = ++clock_;
  ++opens_;
  return *open_.back().reader;
}

void SampleSource::put(const Key& key, std::shared_ptr<const RawSample> sample) {
  if (cache_.count(key) != 0) return;
  const uint64_t serial = ++clock_;
  cached_bytes_ += sample->bytes;
  cache_.emplace(key, Cached{std::move(sample), serial});
  order_.emplace_back(key, serial);
  evict();
}

void SampleSource::evict() {
  while ((static_cast<int64_t>(cache_.size()) > read_ahead_ ||
          cached_bytes_ > read_ahead_bytes_) && !order_.empty()) {
    const auto [key, serial] = order_.front();
    order_.pop_front();
    auto it = cache_.find(key);
    if (it == cache_.end() || it->second.serial != serial) continue;  // taken already
    cached_bytes_ -= it->second.sample->bytes;
    cache_.erase(it);
  }
  if (cache_.empty()) order_.clear();
}

std::shared_ptr<const RawSample> SampleSource::fetch(size_t shard, int64_t sample, bool keep) {
  adopt_process();
  // Every request looks at the file (one stat): a tar rewritten in place while a reader is
  // open would otherwise mix old samples (read ahead, buffered) with new ones.
  check_unchanged(shard);
  const Key key{shard, sample};
  if (auto it = cache_.find(key); it != cache_.end()) {
    std::shared_ptr<const RawSample> found = it->second.sample;
    if (!keep) {
      cached_bytes_ -= found->bytes;
      cache_.erase(it);
    }
    return found;
  }
  TarReader& reader = reader_at_or_before(shard, sample);
  try {
    return read_up_to(reader, shard, sample, keep);
  } catch (...) {
    // A reader that failed is in no known state: the next request opens the tar again.
    open_.erase(std::find_if(open_.begin(), open_.end(),
                             [&](const Open& o) { return o.reader.get() == &reader; }));
    check_unchanged(shard);  // a tar cut or rewritten while read: say so, not "damaged"
    throw;
  }
}

std::shared_ptr<const RawSample> SampleSource::read_up_to(TarReader& reader, size_t shard,
                                                          int64_t sample, bool keep) {
  while (reader.position() < sample) {
    const int64_t at = reader.position();
    // Only the samples just before the one asked for are worth keeping: those far behind
    // are another worker's (a shard split by ranges) or will be evicted before their turn.
    if (sample - at <= read_ahead_ && cache_.count(Key{shard, at}) == 0) {
      auto passed = std::make_shared<RawSample>();
      if (!reader.next(passed.get())) changed(reader, shard);
      put(Key{shard, at}, std::move(passed));
    } else if (!reader.next(nullptr)) {
      changed(reader, shard);
    }
  }
  auto out = std::make_shared<RawSample>();
  if (!reader.next(out.get())) changed(reader, shard);
  if (keep) put(Key{shard, sample}, out);
  return out;
}

}  // namespace mploader::shards::detail
