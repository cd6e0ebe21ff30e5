// TarShards: the scan at construction, and get(): a sample read through the process's
// SampleSource, decoded, and replaced by the next good one under OnBadSample::kSkip.
#include <mploader/errors.h>
#include <mploader/loading_context.h>
#include <mploader/shards/tar_shards.h>

#include "core/file_list.h"
#include "core/loading_scope.h"
#include "remote/manifest.h"
#include "remote/shard_cache.h"
#include "shards/sample_decode.h"
#include "shards/text.h"
#include "shards/sample_source.h"
#include "shards/shard_count.h"
#include "shards/tar_reader.h"
#include "util/errors.h"

#include <algorithm>
#include <stdexcept>

namespace mploader::shards {

struct TarShards::Reading {
  explicit Reading(const TarShards& d)
      : source(d.paths_, d.scans_, d.options_.read_ahead, d.options_.read_ahead_bytes,
               d.options_.remote),
        decoding(d.options_.max_pixels) {}
  detail::SampleSource source;
  detail::ImageDecoding decoding;
};

namespace {

using detail::in_quotes;

void check_options(const std::vector<std::string>& paths, const TarShardsOptions& o) {
  mploader::detail::check_file_list("TarShards", "tar_paths", paths, /*from_directory=*/true);
  for (const std::string& k : o.int_keys) {
    if (o.image_keys.count(k) != 0) {
      throw OptionError("int_keys", mploader::detail::message(
                                        "TarShards", "extension " + in_quotes(k) +
                                                         " is in both int_keys and image_keys",
                                        "List it in one of them"));
    }
  }
  auto at_least = [](const char* name, int64_t value, int64_t least) {
    if (value < least) {
      throw OptionError(name, mploader::detail::message(
                                  "TarShards", std::string(name) + " is " + std::to_string(value),
                                  "Give " + std::to_string(least) + " or more"));
    }
  };
  at_least("read_ahead", o.read_ahead, 0);
  at_least("read_ahead_bytes", o.read_ahead_bytes, 0);
  at_least("max_consecutive_bad", o.max_consecutive_bad, 0);
  at_least("max_pixels", o.max_pixels, 1);
  at_least("remote.max_retries", o.remote.max_retries, 0);
  at_least("remote.cache_limit_bytes", o.remote.cache_limit_bytes, 0);
  for (const auto& [name, seconds] : {std::pair<const char*, double>{"remote.connect_timeout_s",
                                          o.remote.connect_timeout_s},
                                      {"remote.stall_timeout_s", o.remote.stall_timeout_s}}) {
    if (!(seconds >= 0.001 && seconds <= 86400)) {
      throw OptionError(name, mploader::detail::message(
                                  "TarShards", std::string(name) + " is " + std::to_string(seconds),
                                  "Give a number of seconds from 0.001 to 86400"));
    }
  }
}

std::vector<ShardScan> scan_all(const std::vector<std::string>& paths,
                                const TarShardsOptions& options) {
  check_options(paths, options);
  // URLs are counted from their manifest (one request); without one, by downloading them once
  // per machine (shard_count.h).
  std::vector<std::string> urls;
  for (const std::string& p : paths) {
    if (remote::is_url(p)) urls.push_back(p);
  }
  std::optional<std::vector<remote::detail::ManifestEntry>> listed =
      remote::detail::find_manifest_entries(urls, options.remote);
  if (!listed) listed = detail::count_without_manifest(urls, options.remote);
  std::vector<ShardScan> scans;
  scans.reserve(paths.size());
  size_t next_listed = 0;
  for (const std::string& p : paths) {
    if (remote::is_url(p)) {
      const remote::detail::ManifestEntry& e = (*listed)[next_listed++];
      scans.push_back(ShardScan{e.samples, e.bytes, 0, e.sha256});
    } else {
      scans.push_back(detail::scan_shard(p));
    }
  }
  return scans;
}

// A corpus of no sample would fail only when the Loader plans its first epoch.
void refuse_empty(const std::vector<std::string>& paths, const std::vector<ShardScan>& scans) {
  for (const ShardScan& s : scans) {
    if (s.num_samples > 0) return;
  }
  std::string names;
  for (size_t i = 0; i < paths.size() && i < 5; ++i) names += (i ? ", " : "") + in_quotes(paths[i]);
  if (paths.size() > 5) names += " and " + std::to_string(paths.size() - 5) + " more";
  throw OptionError("tar_paths",
                    mploader::detail::message("TarShards",
                                              "the corpus is empty: its " +
                                                  std::to_string(paths.size()) +
                                                  " tar file(s) (" + names +
                                                  ") hold no sample (no member whose name has an "
                                                  "extension)",
                                              "Give tars that hold samples"));
}

}  // namespace

TarShards::TarShards(std::vector<std::string> tar_paths, TarShardsOptions options)
    : TarShards(remote::resolve_shard_urls(tar_paths, options.remote, ".tar"), options, 0) {}

// The entries resolved to shards (brace patterns expanded, prefixes listed), then scanned.
TarShards::TarShards(std::vector<std::string> tar_paths, const TarShardsOptions& options, int)
    : TarShards(tar_paths, scan_all(tar_paths, options), options) {}  // no move: order

TarShards::TarShards(std::vector<std::string> tar_paths, std::vector<ShardScan> scans,
                     TarShardsOptions options)
    : paths_(std::move(tar_paths)), scans_(std::move(scans)), options_(std::move(options)) {
  check_options(paths_, options_);
  if (scans_.size() != paths_.size()) {
    throw OptionError("scans", mploader::detail::message(
                                   "TarShards", std::to_string(scans_.size()) + " scans for " +
                                                    std::to_string(paths_.size()) + " tar files",
                                   "Give one scan for each tar file, in the files' order"));
  }
  refuse_empty(paths_, scans_);
  std::vector<ShardInfo> shards;
  for (size_t i = 0; i < paths_.size(); ++i) {
    shards.push_back(ShardInfo{paths_[i], scans_[i].num_samples});
  }
  declare_shards(std::move(shards));
}

TarShards::~TarShards() = default;

std::shared_ptr<TarShards> TarShards::from_directory(const std::string& dir,
                                                     TarShardsOptions options) {
  std::vector<std::string> paths = mploader::detail::folder_files("TarShards", dir, ".tar");
  return std::make_shared<TarShards>(std::move(paths), std::move(options));
}

std::string TarShards::shuffle_buffer_warning(int64_t shuffle_buffer) const {
  if (shuffle_buffer <= options_.read_ahead) return {};
  return "TarShards: LoaderOptions::shuffle_buffer is " + std::to_string(shuffle_buffer) +
         " samples but TarShardsOptions::read_ahead keeps only " +
         std::to_string(options_.read_ahead) + " read ahead: a sample the buffer asks for after "
         "a later one then reopens its tar and reads it again from the start, which can make an "
         "epoch 100 times slower. Set read_ahead to at least " + std::to_string(shuffle_buffer);
}

Sample TarShards::get(int64_t index) {
  const ShardPosition at = locate(index);
  const uint64_t seed = mploader::detail::context_sample_seed(index);
  const std::string& path = paths_[at.shard];
  const int64_t count = shards()[at.shard].num_samples;
  auto where = [&](int64_t sample) {
    return "sample " + std::to_string(global_index(at.shard, sample)) + " (sample " +
           std::to_string(sample) + " of " + std::to_string(count) + " in " + in_quotes(path) + ")";
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reading_) reading_ = std::make_unique<Reading>(*this);
  std::string first_error;
  for (int64_t step = 0;; ++step) {
    const int64_t sample = (at.sample + step) % count;
    std::shared_ptr<const detail::RawSample> raw;
    try {
      raw = reading_->source.fetch(at.shard, sample, /*keep=*/step > 0);
    } catch (const std::runtime_error& e) {  // mploader::Error, or the library's own
      // A changed shard, a failed download, a full cache and a bad setting (the cache's
      // folder or limit) say what to do themselves; any other failure is the tar's.
      const bool damaged = dynamic_cast<const detail::ShardChanged*>(&e) == nullptr &&
                           dynamic_cast<const remote::TransportError*>(&e) == nullptr &&
                           dynamic_cast<const remote::detail::CacheError*>(&e) == nullptr &&
                           dynamic_cast<const OptionError*>(&e) == nullptr;
      throw Error(mploader::detail::message(
          "TarShards", "cannot read " + where(sample) + ": " + e.what(),
          damaged ? "The tar is damaged: check it (tar tvf " + path +
                        ") and write it again, or leave it out of the dataset"
                  : ""));
    }
    try {
      Sample out = detail::decode_sample(*raw, options_, seed, reading_->decoding);
      if (step > 0) report_skipped_sample(index, global_index(at.shard, sample), path, first_error);
      return out;
    } catch (const detail::BadSample& e) {
      if (options_.on_bad_sample == OnBadSample::kRaise) {
        throw Error(mploader::detail::message(
            "TarShards", where(sample) + ": " + e.what(),
            "Write the sample again, or set TarShardsOptions::on_bad_sample = kSkip, which loads "
            "the next good sample of the shard in its place and counts the skip"));
      }
      if (step == 0) first_error = e.what();
      if (step >= options_.max_consecutive_bad || step + 1 >= count) {
        throw Error(mploader::detail::message(
            "TarShards",
            where(at.sample) + ": " + first_error + "; nor could any of the " +
                std::to_string(step) + " samples after it be loaded (max_consecutive_bad is " +
                std::to_string(options_.max_consecutive_bad) + ")",
            "Check that this is the shard you meant, and that TarShardsOptions::keys are its "
            "extensions"));
      }
    }
  }
}

void TarShards::prefetch_shards(const std::vector<size_t>& shards) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reading_) reading_ = std::make_unique<Reading>(*this);
  reading_->source.prefetch(shards);
}

int64_t TarShards::prefetched_shards() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reading_ ? reading_->source.prefetched() : 0;
}

int64_t TarShards::prefetched_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reading_ ? reading_->source.prefetched_bytes() : 0;
}

}  // namespace mploader::shards
