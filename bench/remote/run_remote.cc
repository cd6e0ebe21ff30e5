// mploader-bench --workload remote (remote_bench.h): the data, the servers, and every row.
#include "bench/isolate.h"
#include "bench/remote/remote_bench.h"
#include "bench/remote/remote_report.h"
#include "bench/remote/remote_servers.h"
#include "bench/report.h"
#include "bench/runners/python_child.h"
#include "bench/workloads/jpeg_dataset.h"
#include "bench/workloads/tar_workload.h"
#include "remote/manifest.h"
#include "remote/sha256.h"
#include "shards/tar_reader.h"

#include <mploader/remote/remote.h>
#include <mploader/shards/tar_shards.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>

namespace bench {
namespace {

namespace fs = std::filesystem;
namespace mrd = mploader::remote::detail;

constexpr const char* kBucket = "mploader-bench";

// Bytes of the files under `dir` (0 when it does not exist).
int64_t folder_bytes(const std::string& dir) {
  std::error_code ec;
  int64_t total = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// The manifest mploader plans URL shards with, written beside the shards once.
void ensure_manifest(const std::string& tar_dir) {
  const std::string path = tar_dir + "/mploader-manifest.json";
  if (fs::exists(path)) return;
  std::vector<std::string> tars;
  for (const fs::directory_entry& e : fs::directory_iterator(tar_dir)) {
    if (e.path().extension() == ".tar") tars.push_back(e.path().string());
  }
  std::sort(tars.begin(), tars.end());
  std::vector<mrd::ManifestEntry> entries;
  for (const std::string& tar : tars) {
    const auto scan = mploader::shards::detail::scan_shard(tar);
    entries.push_back({fs::path(tar).filename().string(), scan.file_bytes, scan.num_samples,
                       mrd::sha256_of_file(tar)});
  }
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << mrd::manifest_text(entries);
  fs::rename(tmp, path);
}

class RemoteRun {
 public:
  RemoteRun(const RemoteBenchConfig& config, std::string tar_dir, std::string scratch)
      : c_(config), tar_dir_(std::move(tar_dir)), scratch_(std::move(scratch)),
        http_(tar_dir_, make_dir("nginx"), config.http_rate), s3_(python(), make_dir("moto")) {
    upload();
  }

  std::vector<RemoteRow> run_all() {
    std::vector<RemoteRow> rows;
    for (int64_t workers : c_.workers) {
      add(rows, mploader_row("local", "", {tar_dir_}, "", workers));
      mploader_pair(rows, "http", {http_url()}, workers);
      add(rows, mploader_row("http", "cold", {http_url()},
                             make_dir("no-read-ahead-" + std::to_string(workers)), workers,
                             /*read_ahead=*/false));
      if (has_peer("webdataset")) peer_pair(rows, "webdataset", workers);
      mploader_pair(rows, "s3", {std::string("s3://") + kBucket + "/tar/"}, workers);
      if (has_peer("mosaic") && mds_objects_ > 0) peer_pair(rows, "mosaic", workers);
    }
    return rows;
  }
  int failures() const { return failures_; }
  std::string note() const { return note_; }

 private:
  std::string make_dir(const std::string& name) const {
    const std::string dir = scratch_ + "/" + name;
    fs::create_directories(dir);
    return dir;
  }
  bool has_peer(const std::string& peer) const {
    return std::find(c_.peers.begin(), c_.peers.end(), peer) != c_.peers.end();
  }
  // Every shard as one WebDataset brace pattern (the names ensure_tar_shards writes).
  std::string http_url() const {
    char last[16];
    std::snprintf(last, sizeof last, "%03d", kTarShardCount - 1);
    return http_.url(std::string("shard-{000..") + last + "}.tar");
  }

  // The tars (and manifest) into the bucket under tar/, and the MosaicML copy under mds/.
  void upload() {
    std::string out;
    const int status = run_child({python(), script_path("remote_peers.py"), "prepare",
                                  "--tar-dir", tar_dir_, "--endpoint", s3_.endpoint(),
                                  "--bucket", kBucket, "--mds-dir", make_dir("mds")},
                                 &out);
    if (status != 0) {
      throw std::runtime_error("remote: " + script_path("remote_peers.py") + " prepare exited "
                               "with status " + std::to_string(status) + " (its stderr is "
                               "above)");
    }
    const nlohmann::json j = nlohmann::json::parse(out);
    mds_objects_ = j.value("mds_objects", 0);
    note_ = j.value("note", "");
  }

  RunConfig base(const std::string& loader, int64_t workers) const {
    RunConfig r;
    r.loader = loader;
    r.workload = "remote";
    r.workers = workers;
    r.batch_size = c_.batch_size;
    r.batches = c_.batches;
    r.prefetch = c_.prefetch;
    r.timeout_ms = c_.timeout_ms;
    return r;
  }

  void add(std::vector<RemoteRow>& rows, std::optional<RemoteRow> row) {
    if (row) {
      rows.push_back(*row);
    } else {
      ++failures_;
    }
  }

  // A cold run into an empty cache folder, then a warm one over what it left.
  void mploader_pair(std::vector<RemoteRow>& rows, const std::string& source,
                     const std::vector<std::string>& shards, int64_t workers) {
    const std::string cache = make_dir("mploader-" + source + "-" + std::to_string(workers));
    add(rows, mploader_row(source, "cold", shards, cache, workers));
    add(rows, mploader_row(source, "warm", shards, cache, workers));
  }

  std::optional<RemoteRow> mploader_row(const std::string& source, const std::string& cache,
                                        const std::vector<std::string>& shards,
                                        const std::string& cache_dir, int64_t workers,
                                        bool read_ahead = true) {
    const RunConfig config = base(read_ahead ? "mploader" : "mploader-no-read-ahead", workers);
    try {
      mploader::shards::TarShardsOptions options = tar_workload_options();
      options.remote.cache_dir = cache_dir;
      if (!read_ahead) options.remote.prefetch_bytes = 0;
      options.remote.endpoint_url = s3_.endpoint();
      std::shared_ptr<mploader::Dataset> data =
          shards.size() == 1 && !mploader::remote::is_url(shards[0])
              ? mploader::shards::TarShards::from_directory(shards[0], options)
              : std::make_shared<mploader::shards::TarShards>(shards, options);
      const int64_t before = folder_bytes(cache_dir);
      const std::vector<RunResult> got = run_isolated(
          config, [&] { return std::vector<RunResult>{run_mploader(config, data)}; });
      const int64_t downloaded = cache_dir.empty() ? -1 : folder_bytes(cache_dir) - before;
      return RemoteRow{got.front(), source, cache, downloaded};
    } catch (const std::exception& e) {
      std::cerr << "mploader-bench: remote: " << config.loader << " " << source << " " << cache
                << " workers=" << workers << " failed: " << e.what() << '\n';
      return std::nullopt;
    }
  }

  void peer_pair(std::vector<RemoteRow>& rows, const std::string& peer, int64_t workers) {
    const std::string dir = make_dir(peer + "-" + std::to_string(workers));
    add(rows, peer_row(peer, "cold", dir, workers));
    add(rows, peer_row(peer, "warm", dir, workers));
  }

  std::optional<RemoteRow> peer_row(const std::string& peer, const std::string& cache,
                                    const std::string& dir, int64_t workers) {
    std::vector<std::string> args = {python(), script_path("remote_peers.py"), "measure",
                                     "--peer", peer};
    if (peer == "webdataset") {
      args.insert(args.end(), {"--urls", http_url(), "--cache-dir", dir});
    } else {
      args.insert(args.end(), {"--remote", std::string("s3://") + kBucket + "/mds", "--local",
                               dir, "--endpoint", s3_.endpoint()});
    }
    args.insert(args.end(), {"--workers", std::to_string(workers), "--batch-size",
                             std::to_string(c_.batch_size), "--batches",
                             std::to_string(c_.batches), "--prefetch",
                             std::to_string(c_.prefetch), "--cache", cache});
    std::string out;
    const int status = run_child(args, &out);
    try {
      if (status != 0) throw std::runtime_error("exited with status " + std::to_string(status));
      const std::string line = out.substr(0, out.find('\n'));
      const nlohmann::json j = nlohmann::json::parse(line);
      return RemoteRow{parse_json_line(base(peer, workers), line), j.at("source"), cache,
                       j.at("downloaded_bytes").get<int64_t>()};
    } catch (const std::exception& e) {
      std::cerr << "mploader-bench: remote: " << peer << " " << cache << " workers=" << workers
                << " failed (" << e.what() << "; its stderr is above)\n";
      return std::nullopt;
    }
  }

  const RemoteBenchConfig& c_;
  std::string tar_dir_, scratch_;
  HttpFolderServer http_;
  S3Server s3_;
  int64_t mds_objects_ = 0;
  std::string note_;
  int failures_ = 0;
};

// A scratch folder for the servers' state and every cache, removed when the bench ends.
struct Scratch {
  Scratch() {
    char pattern[] = "/tmp/mploader-bench-remote-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      throw std::runtime_error("remote: cannot make a folder under /tmp; check its space");
    }
    path = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

}  // namespace

int run_remote(const RemoteBenchConfig& config) {
  const std::string jpeg_dir = default_jpeg_dir(config.jpeg_count);
  ensure_jpeg_set(jpeg_dir, config.fmnist_dir, config.jpeg_count);
  const std::string tar_dir = default_tar_dir(config.jpeg_count);
  ensure_tar_shards(tar_dir, jpeg_dir);
  ensure_manifest(tar_dir);
  // moto_server takes any key; these keep a user's real credentials out of the bench.
  ::setenv("AWS_ACCESS_KEY_ID", "mploader-bench", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "mploader-bench", 1);
  ::setenv("AWS_DEFAULT_REGION", "us-east-1", 1);
  ::unsetenv("AWS_PROFILE");
  ::unsetenv("AWS_SESSION_TOKEN");
  Scratch scratch;
  if (!config.json) std::cerr << "mploader-bench: remote: shards in " << tar_dir << '\n';
  RemoteRun run(config, tar_dir, scratch.path);
  const std::vector<RemoteRow> rows = run.run_all();
  print_remote(std::cout, config, rows, folder_bytes(tar_dir));
  if (!run.note().empty()) std::cerr << "mploader-bench: remote: " << run.note() << '\n';
  return run.failures() == 0 ? 0 : 1;
}

}  // namespace bench
