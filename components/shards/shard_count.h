// Counting tar shards named by URL when no manifest is published beside them (WebDataset
// corpora are published so): each shard is downloaded into the shard cache, in parallel,
// and its samples counted, once per machine; the counts are kept in the cache as a manifest,
// which the next dataset over the same folder reads instead of downloading anything.
#pragma once

#include "remote/manifest.h"

#include <mploader/remote/remote.h>

#include <string>
#include <vector>

namespace mploader::shards::detail {

// Each URL's entry, from the manifest kept in the cache for their folder, or counted by
// downloading every shard (warning once per process with the command that avoids it).
// Entries carry no SHA-256: a reader's cache key is then the download's own. Throws
// OptionError naming the shard that cannot be downloaded or read, and the fix.
std::vector<remote::detail::ManifestEntry> count_without_manifest(
    const std::vector<std::string>& urls, const remote::RemoteOptions& options);

}  // namespace mploader::shards::detail
