// What the remote tests share: a corpus of tar shards with its manifest, served by nginx
// (http_server.h), and the options that read it through a cache of the test's own.
#pragma once

#include "components/remote/tests/http_server.h"
#include "components/shards/tests/shard_test_support.h"

#include <mploader/remote/remote.h>
#include <mploader/shards/tar_shards.h>

#include "remote/manifest.h"
#include "remote/sha256.h"
#include "shards/tar_reader.h"

#include <fstream>
#include <memory>

namespace shard_test {

// The shards and downloads in a cache folder (not its lock files).
inline std::vector<std::string> cached_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name[0] != '.' && name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") != 0) {
      out.push_back(name);
    }
  }
  return out;
}

// Writes mploader-manifest.json over `paths` (in `dir`), as mploader-manifest does.
inline void write_manifest(const std::string& dir, const std::vector<std::string>& paths) {
  namespace mrd = mploader::remote::detail;
  std::vector<mrd::ManifestEntry> entries;
  for (const std::string& p : paths) {
    const auto scan = mploader::shards::detail::scan_shard(p);
    entries.push_back({p.substr(p.rfind('/') + 1), scan.file_bytes, scan.num_samples,
                       mrd::sha256_of_file(p)});
  }
  std::ofstream(dir + "/mploader-manifest.json") << mrd::manifest_text(entries);
}

// Shards of `sizes` samples, each sample padded with `pad` bytes (a "pad.bin" member), so that
// a shard is big enough to be cut mid-transfer; its manifest; and nginx serving them.
class ServedCorpus {
 public:
  ServedCorpus(const std::string& tag, const std::vector<int64_t>& sizes, size_t pad = 0,
               const std::string& rate = "0")
      : root_(tag + "-root"), state_(tag + "-state"), cache_(tag + "-cache") {
    int64_t first = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const std::string name = "shard-" + std::to_string(i) + ".tar";
      std::vector<Entry> entries = shard_entries(first, sizes[i], "part" + std::to_string(i));
      if (pad > 0) {
        for (int64_t g = first; g < first + sizes[i]; ++g) {
          entries.push_back({"part" + std::to_string(i) + "/" + std::to_string(100000 + g) +
                                 ".pad.bin",
                             std::string(pad, static_cast<char>('a' + g % 26))});
        }
        std::stable_sort(entries.begin() + 2, entries.end(),
                         [](const Entry& a, const Entry& b) {
                           return a.name.substr(0, a.name.find('.')) <
                                  b.name.substr(0, b.name.find('.'));
                         });
      }
      write_tar(root_.file(name), entries);
      paths_.push_back(root_.file(name));
      first += sizes[i];
    }
    total_ = first;
    write_manifest(root_.path().string(), paths_);
    server_ = std::make_unique<NginxServer>(root_.path().string(), state_.path().string(), rate);
  }
  NginxServer& server() { return *server_; }
  std::vector<std::string> urls() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < paths_.size(); ++i) {
      out.push_back(server_->url("shard-" + std::to_string(i) + ".tar"));
    }
    return out;
  }
  const std::vector<std::string>& paths() const { return paths_; }
  int64_t total() const { return total_; }
  std::string cache_dir() const { return cache_.path().string(); }
  // Reads "idx" and "txt" through the test's cache, with short timeouts and backoff.
  mploader::shards::TarShardsOptions options() const {
    mploader::shards::TarShardsOptions o;
    o.keys = {"idx", "txt"};
    o.int_keys = {"idx"};
    o.remote.cache_dir = cache_dir();
    o.remote.connect_timeout_s = 2;
    o.remote.stall_timeout_s = 2;
    return o;
  }

 private:
  TempDir root_, state_, cache_;
  std::vector<std::string> paths_;
  int64_t total_ = 0;
  std::unique_ptr<NginxServer> server_;
};

}  // namespace shard_test
