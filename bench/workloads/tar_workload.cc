// The tar workload's shards (packed once, cached) and its TarShards dataset.
#include "bench/workloads/tar_workload.h"

#include "bench/run_config.h"
#include "bench/workloads/jpeg_dataset.h"

#include <mploader/errors.h>
#include <mploader/shards/tar_shards.h>
#include <mploader/vision/transforms.h>

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace bench {

namespace {

// One image of the jpeg set: its file and class folder.
struct Image {
  fs::path file;
  std::string label;
};

// The set's images ordered by file name (the generator's index), so that the classes are mixed
// within every shard, as in a shuffled WebDataset corpus.
std::vector<Image> list_images(const std::string& jpeg_dir) {
  std::vector<Image> images;
  std::error_code ec;
  for (int c = 0; c < 10; ++c) {
    const fs::path folder = fs::path(jpeg_dir) / std::to_string(c);
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".jpg") images.push_back({it->path(), std::to_string(c)});
    }
  }
  std::sort(images.begin(), images.end(), [](const Image& a, const Image& b) {
    return a.file.filename() < b.file.filename();
  });
  return images;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw std::runtime_error("tar: cannot read " + file.string());
  return bytes;
}

// Appends one regular-file member; throws naming the tar on a write error.
void add_member(archive* a, const std::string& tar, const std::string& name,
                const std::string& bytes) {
  archive_entry* entry = archive_entry_new();
  archive_entry_set_pathname(entry, name.c_str());
  archive_entry_set_filetype(entry, AE_IFREG);
  archive_entry_set_perm(entry, 0644);
  archive_entry_set_size(entry, static_cast<la_int64_t>(bytes.size()));
  const bool ok = archive_write_header(a, entry) == ARCHIVE_OK &&
                  archive_write_data(a, bytes.data(), bytes.size()) ==
                      static_cast<la_ssize_t>(bytes.size());
  archive_entry_free(entry);
  if (!ok) {
    throw std::runtime_error("tar: cannot write " + tar + " (" + archive_error_string(a) +
                             "); check the folder's free space, or set MPLOADER_BENCH_CACHE to "
                             "another folder");
  }
}

// Writes images [begin, end) as one POSIX tar: "<stem>.jpg" then "<stem>.cls" per sample.
void write_shard(const std::string& tar, const std::vector<Image>& images, size_t begin,
                 size_t end) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_filename(a, tar.c_str()) != ARCHIVE_OK) {
    const std::string why = archive_error_string(a);
    archive_write_free(a);
    throw std::runtime_error("tar: cannot create " + tar + " (" + why +
                             "); set MPLOADER_BENCH_CACHE to a writable folder");
  }
  try {
    for (size_t i = begin; i < end; ++i) {
      const std::string key = images[i].file.stem().string();
      add_member(a, tar, key + ".jpg", read_file(images[i].file));
      add_member(a, tar, key + ".cls", images[i].label);
    }
  } catch (...) {
    archive_write_free(a);
    throw;
  }
  const bool closed = archive_write_close(a) == ARCHIVE_OK;
  archive_write_free(a);
  if (!closed) throw std::runtime_error("tar: cannot finish " + tar + "; check free space");
}

void write_shards(const std::string& dir, const std::vector<Image>& images) {
  fs::create_directories(dir);
  const size_t n = images.size();
  for (size_t s = 0; s < static_cast<size_t>(kTarShardCount); ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "/shard-%03zu.tar", s);
    write_shard(dir + name, images, s * n / kTarShardCount, (s + 1) * n / kTarShardCount);
  }
}

}  // namespace

std::string default_tar_dir(int64_t count) {
  return bench_cache_dir() + "/fmnist-tar-" + std::to_string(count);
}

void ensure_tar_shards(const std::string& dir, const std::string& jpeg_dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  const std::vector<Image> images = list_images(jpeg_dir);
  if (images.size() < static_cast<size_t>(kTarShardCount)) {
    throw std::runtime_error("tar: " + jpeg_dir + " has " + std::to_string(images.size()) +
                             " JPEGs in class folders 0-9, fewer than the " +
                             std::to_string(kTarShardCount) + " shards; give --jpeg-count " +
                             std::to_string(kTarShardCount) + " or more");
  }
  fs::create_directories(fs::path(dir).parent_path(), ec);
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  try {
    write_shards(tmp, images);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, dir, ec);  // another bench may have won the race: its shards are as good
  if (ec) fs::remove_all(tmp, ec);
  if (!fs::is_directory(dir, ec)) {
    throw std::runtime_error("tar: cannot create the shards in " + dir +
                             "; set MPLOADER_BENCH_CACHE to a writable folder");
  }
}

mploader::shards::TarShardsOptions tar_workload_options() {
  using namespace mploader::vision;
  mploader::shards::TarShardsOptions options;
  options.keys = {"jpg", "cls"};
  options.int_keys = {"cls"};
  // The jpeg workload's transform (jpeg_dataset.cc), so the two workloads differ in reading only.
  options.image_keys.emplace(
      "jpg", Compose({RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
                      Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})}));
  return options;
}

std::shared_ptr<mploader::Dataset> make_tar_dataset(const std::string& dir) {
  try {
    return mploader::shards::TarShards::from_directory(dir, tar_workload_options());
  } catch (const mploader::OptionError& e) {
    throw UsageError(std::string("--data-dir: ") + e.what() +
                     "; or leave --data-dir out to use shards packed from the generated jpeg set");
  }
}

}  // namespace bench
