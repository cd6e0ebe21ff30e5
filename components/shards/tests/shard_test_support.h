// What the shards tests share: a temporary folder, tars written with libarchive's write API,
// and a corpus whose every member's bytes follow from the sample's global index.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shard_test {

namespace fs = std::filesystem;

/// A fresh folder under the system's temporary one, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int serial = 0;
    path_ = fs::temp_directory_path() /
            ("mploader-shards-" + tag + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(serial++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// One tar entry: a regular file of `bytes`, or a folder when `folder` is set.
struct Entry {
  std::string name;
  std::string bytes;
  bool folder = false;
};

/// Writes `entries` in order as a POSIX (pax) tar at `path`, gzipped when `gzip`.
inline void write_tar(const std::string& path, const std::vector<Entry>& entries,
                      bool gzip = false) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (gzip) archive_write_add_filter_gzip(a);
  if (archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) {
    throw std::runtime_error("cannot write " + path + ": " + archive_error_string(a));
  }
  for (const Entry& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.name.c_str());
    archive_entry_set_filetype(entry, e.folder ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry, e.folder ? 0755 : 0644);
    archive_entry_set_size(entry, e.folder ? 0 : static_cast<la_int64_t>(e.bytes.size()));
    if (archive_write_header(a, entry) != ARCHIVE_OK) {
      throw std::runtime_error("cannot write a header to " + path);
    }
    if (!e.folder && !e.bytes.empty()) {
      archive_write_data(a, e.bytes.data(), e.bytes.size());
    }
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
}

/// The "txt" member of global sample `g`: 1 to 300 bytes, every byte value used.
inline std::string txt_of(int64_t g) {
  std::string out;
  const int64_t n = 1 + (g * 37) % 300;
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<char>((g * 131 + i * 7) & 0xff));
  return out;
}

/// The "seg.bin" member of global sample `g`.
inline std::string seg_of(int64_t g) { return "seg" + std::to_string(g * g); }

/// The entries of a shard of `count` samples whose first has global index `first`: a folder,
/// a member without extension (ignored), then per sample "idx" (the global index as text),
/// "txt" and "seg.bin", under the key "<dir>/<global index>".
inline std::vector<Entry> shard_entries(int64_t first, int64_t count, const std::string& dir) {
  std::vector<Entry> out{{dir, "", true}, {dir + "/README", "not a member"}};
  for (int64_t g = first; g < first + count; ++g) {
    const std::string key = dir + "/" + std::to_string(100000 + g);
    out.push_back({key + ".idx", std::to_string(g) + "\n"});
    out.push_back({key + ".txt", txt_of(g)});
    out.push_back({key + ".seg.bin", seg_of(g)});
  }
  return out;
}

/// Writes shards of the given sizes as "shard-<i>.tar" into `dir`; returns their paths.
inline std::vector<std::string> write_corpus(const TempDir& dir, const std::vector<int64_t>& sizes) {
  std::vector<std::string> paths;
  int64_t first = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    paths.push_back(dir.file("shard-" + std::to_string(i) + ".tar"));
    write_tar(paths.back(), shard_entries(first, sizes[i], "part" + std::to_string(i)));
    first += sizes[i];
  }
  return paths;
}

/// A tensor of bytes as a string.
template <typename Tensor>
std::string bytes_of(const Tensor& t) {
  const auto* p = static_cast<const char*>(t.data_ptr());
  return std::string(p, p + t.numel());
}

}  // namespace shard_test
