// mploader-manifest: writes the manifest that lets TarShards plan shards it reads by URL
// without downloading them: each tar's size, sample count and SHA-256.
//
//   mploader-manifest /data/train                 # writes /data/train/mploader-manifest.json
//   mploader-manifest /data/train -o train.json   # elsewhere
//   mploader-manifest /data/train --no-sha256     # faster; downloads are then checked by size
//
// Every "*.tar" under the folder (subfolders too), in sorted order, named relative to it: upload
// the manifest beside the shards, keeping the layout. Exit: 0 written, 1 a tar could not be
// read (the message names it), 2 bad usage.
#include "remote/manifest.h"
#include "remote/sha256.h"
#include "shards/tar_reader.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace {

namespace fs = std::filesystem;
namespace mrd = mploader::remote::detail;

std::vector<std::string> tars_under(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() > 4 &&
        name.compare(name.size() - 4, 4, ".tar") == 0) {
      out.push_back(fs::relative(entry.path(), folder).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes mploader-manifest.json: the size, sample count and SHA-256 of every tar "
               "shard under a folder, so that TarShards counts shards it reads by URL without "
               "downloading them. Upload it beside the shards."};
  std::string folder, output;
  bool no_sha256 = false;
  app.add_option("folder", folder, "the folder of the shards")->required()->check(
      CLI::ExistingDirectory);
  app.add_option("-o,--output", output,
                 "where to write it (default: FOLDER/mploader-manifest.json)");
  app.add_flag("--no-sha256", no_sha256, "leave the checksums out (downloads are then checked "
               "by size only)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (output.empty()) output = (fs::path(folder) / "mploader-manifest.json").string();
  const std::vector<std::string> names = tars_under(folder);
  if (names.empty()) {
    std::cerr << "mploader-manifest: no file ending in .tar under \"" << folder
              << "\": give the folder of the shards\n";
    return 2;
  }
  std::vector<mrd::ManifestEntry> entries;
  int64_t samples = 0;
  try {
    for (const std::string& name : names) {
      const std::string path = (fs::path(folder) / name).string();
      const mploader::shards::ShardScan scan = mploader::shards::detail::scan_shard(path);
      entries.push_back(mrd::ManifestEntry{name, scan.file_bytes, scan.num_samples,
                                           no_sha256 ? "" : mrd::sha256_of_file(path)});
      samples += scan.num_samples;
    }
  } catch (const std::exception& e) {
    std::cerr << "mploader-manifest: " << e.what() << "\n";
    return 1;
  }
  std::ofstream out(output, std::ios::binary);
  out << mrd::manifest_text(entries);
  out.close();
  if (!out) {
    std::cerr << "mploader-manifest: cannot write \"" << output << "\": check the path\n";
    return 1;
  }
  std::cout << "wrote " << output << ": " << entries.size() << " shards, " << samples
            << " samples\n";
  return 0;
}
