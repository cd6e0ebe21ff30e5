// remote/: the manifest beside a corpus's shards, which gives each shard's size, sample count
// and checksum, so that a dataset over URLs is planned without downloading a shard.
//
//   {"format": "mploader-manifest", "version": 1,
//    "shards": [{"name": "shard-000000.tar", "bytes": 40960, "samples": 100,
//                "sha256": "9f86d0..."}, ...]}
//
// "name" is the shard's path relative to the manifest's folder; "sha256" may be left out.
#pragma once

#include <mploader/remote/remote.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mploader::remote::detail {

struct ManifestEntry {
  std::string name;
  int64_t bytes = 0;
  int64_t samples = 0;
  std::string sha256;  // lowercase hex, or empty
};

struct Manifest {
  std::string source;  // the URL or path it was read from, for messages
  std::vector<ManifestEntry> shards;
  std::map<std::string, size_t> by_name;  // name -> index in shards
};

// Parses a manifest's text; throws OptionError naming `source` and the entry for text that is
// not a manifest, a missing or negative field, a name listed twice, or a checksum that is not
// 64 hex digits.
Manifest parse_manifest(const std::string& text, const std::string& source);

// Writes a manifest's text (one shard per line, so that it diffs well).
std::string manifest_text(const std::vector<ManifestEntry>& shards);

// The whole of a small object (at most 64 MiB) at `url` or local `path`; throws
// TransportError / OptionError naming it.
std::string fetch_text(const std::string& url_or_path, const RemoteOptions& options);

// The entry of each URL in `urls` in `m`, a manifest of `folder` (names are relative to it).
// Throws OptionError naming the manifest and the URL it lacks, with the command that writes one.
std::vector<ManifestEntry> entries_for(const Manifest& m, const std::vector<std::string>& urls,
                                       const std::string& folder);

// The manifest entry of each URL in `urls`: from options.manifest, else from
// "mploader-manifest.json" in the first URL's folder; nullopt when that default one is not
// there (HTTP 404), for the caller to count the shards itself. Throws OptionError for a
// manifest that options.manifest names and that is not there, one that does not list a URL,
// and a bucket that does not exist (TransportError).
std::optional<std::vector<ManifestEntry>> find_manifest_entries(
    const std::vector<std::string>& urls, const RemoteOptions& options);

// Where the manifest mploader writes after counting the shards of `folder` (a URL) itself is
// kept, in the shard cache `cache_dir`: a hidden folder, which eviction leaves alone.
std::string kept_manifest_path(const std::string& cache_dir, const std::string& folder);

}  // namespace mploader::remote::detail
