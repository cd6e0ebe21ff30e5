// count_without_manifest (shard_count.h).
#include "shards/shard_count.h"

#include <mploader/errors.h>
#include <mploader/shards/tar_shards.h>

#include "remote/download.h"
#include "remote/shard_cache.h"
#include "remote/url.h"
#include "shards/tar_reader.h"
#include "util/log.h"
#include "util/units.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace mploader::shards::detail {
namespace {

namespace mrd = remote::detail;
using mploader::detail::human_bytes;
using mploader::detail::log;

constexpr size_t kMostDownloadsAtOnce = 8;

// The shards' name in a manifest of `folder`: relative to it, as entries_for() looks them up.
std::string name_in(const std::string& url, const std::string& folder) {
  return url.compare(0, folder.size(), folder) == 0 ? url.substr(folder.size())
                                                    : url.substr(url.rfind('/') + 1);
}

struct Counting {
  Counting(const std::vector<std::string>& u, const remote::RemoteOptions& o, std::string f)
      : urls(u), options(o), folder(std::move(f)), entries(u.size()) {}
  const std::vector<std::string>& urls;
  const remote::RemoteOptions& options;
  std::string folder;
  std::vector<mrd::ManifestEntry> entries;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::string error;  // the first failure, guarded by mutex
};

void count_one(Counting& c, size_t i, mrd::ShardCache& cache,
               std::map<std::string, std::unique_ptr<remote::Transport>>& transports) {
  const std::string& url = c.urls[i];
  std::unique_ptr<remote::Transport>& t = transports[url.substr(0, url.find("://"))];
  if (!t) t = remote::make_transport(url, c.options);
  // Sized first, so that the download is keyed as a reader's later lookup will be: by URL and
  // size.
  const int64_t size = mrd::object_size(*t, url);
  const std::unique_ptr<mrd::CachedShard> lease = cache.acquire(url, {size, "", ""}, *t, c.options);
  const ShardScan scan = scan_shard(lease->path());
  c.entries[i] = mrd::ManifestEntry{name_in(url, c.folder), size, scan.num_samples, ""};
  c.bytes += size;
  ++c.done;
}

// One downloader: takes the next shard until none is left or one failed.
void count_some(Counting& c) {
  mrd::ShardCache cache(mrd::resolve_cache_config(c.options));
  std::map<std::string, std::unique_ptr<remote::Transport>> transports;
  for (size_t i = c.next++; i < c.urls.size() && !c.failed; i = c.next++) {
    try {
      count_one(c, i, cache, transports);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(c.mutex);
      if (c.error.empty()) c.error = "\"" + c.urls[i] + "\": " + e.what();
      c.failed = true;
    }
  }
}

// Runs the downloaders, saying every few seconds how far they got.
void count_all(Counting& c) {
  const size_t n = std::min(kMostDownloadsAtOnce, c.urls.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t) threads.emplace_back([&c] { count_some(c); });
  auto last = std::chrono::steady_clock::now();
  while (c.done + (c.failed ? c.urls.size() : 0) < c.urls.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::chrono::steady_clock::now() - last < std::chrono::seconds(2)) continue;
    last = std::chrono::steady_clock::now();
    log().info("mploader: TarShards: counted {} of {} shards without a manifest ({} so far)",
               c.done.load(), c.urls.size(), human_bytes(static_cast<uint64_t>(c.bytes.load())));
  }
  for (std::thread& t : threads) t.join();
  if (c.failed) {
    throw OptionError("tar_paths", "TarShards: cannot count the samples of " + c.error +
                                       " (there is no manifest beside the shards, so each is "
                                       "downloaded into the shard cache and counted): fix the "
                                       "URL or the store, or publish a manifest with "
                                       "`mploader-manifest`");
  }
}

// The manifest kept for `folder`, when it lists every URL.
std::optional<std::vector<mrd::ManifestEntry>> kept_entries(const std::string& path,
                                                            const std::vector<std::string>& urls,
                                                            const std::string& folder) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return mrd::entries_for(mrd::parse_manifest(text.str(), path), urls, folder);
  } catch (const OptionError&) {
    return std::nullopt;  // damaged, or of other shards: counted again and written anew
  }
}

void keep(const std::string& path, const std::vector<mrd::ManifestEntry>& entries) {
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  const std::string part = path + "." + std::to_string(::getpid()) + ".part";
  std::ofstream(part) << mrd::manifest_text(entries);
  std::filesystem::rename(part, path, ignored);  // whole or not at all, for any reader
  if (ignored) std::filesystem::remove(part, ignored);
}

}  // namespace

std::vector<mrd::ManifestEntry> count_without_manifest(const std::vector<std::string>& urls,
                                                       const remote::RemoteOptions& options) {
  if (urls.empty()) return {};
  const std::string folder = mrd::url_folder(urls[0]);
  const std::string kept =
      mrd::kept_manifest_path(mrd::resolve_cache_config(options).dir, folder);
  if (auto entries = kept_entries(kept, urls, folder)) {
    log().info("mploader: TarShards: no manifest at {}: the samples were counted by an earlier "
               "job on this machine ({})", folder, kept);
    return *entries;
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    log().warn("mploader: TarShards: there is no manifest at {}mploader-manifest.json, so the "
               "{} shards are downloaded into the shard cache now to count their samples. The "
               "counts are kept in {} for later jobs on this machine; so that no job on any "
               "machine downloads to count, upload that file beside the shards as "
               "mploader-manifest.json (or write one with `mploader-manifest` over a local copy "
               "of the shards), or name it in RemoteOptions::manifest",
               folder, urls.size(), kept);
  }
  Counting c(urls, options, folder);
  count_all(c);
  keep(kept, c.entries);
  log().info("mploader: TarShards: counted {} shards ({}) without a manifest; kept in {}",
             urls.size(), human_bytes(static_cast<uint64_t>(c.bytes.load())), kept);
  return c.entries;
}

}  // namespace mploader::shards::detail
