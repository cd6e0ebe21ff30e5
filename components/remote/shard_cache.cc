// ShardCache: leases, one download per shard per machine, and eviction by least recent use
// (shard_cache.h has the files and their locks).
#include "remote/shard_cache.h"

#include <mploader/errors.h>

#include "ipc/unique_fd.h"
#include "remote/sha256.h"
#include "util/fnv1a.h"
#include "util/log.h"
#include "util/units.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace mploader::remote::detail {
namespace {

using mploader::detail::human_bytes;

const char* const kCacheLock = ".mploader-cache.lock";

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

using ipc::UniqueFd;

int flock_retrying(int fd, int op) {
  int rc;
  while ((rc = ::flock(fd, op)) != 0 && errno == EINTR) {
  }
  return rc;
}

bool same_file(int fd, const std::string& path) {
  struct stat a {}, b {};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

// Beside each copy, hidden from the space count: "<sha256> <bytes> <mtime_ns>" of the download.
std::string checksum_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  return path.substr(0, slash + 1) + "." + path.substr(slash + 1) + ".sha256";
}

int64_t mtime_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Records the download's checksum, size and time (best effort: a copy without one is read as
// it is, as copies from before there were records).
void write_checksum(int fd, const std::string& path, const std::string& sha256) {
  struct stat st {};
  if (sha256.empty() || ::fstat(fd, &st) != 0) return;
  const std::string record = checksum_path(path);
  const std::string part = record + "." + std::to_string(::getpid());
  {
    std::ofstream out(part);
    out << sha256 << ' ' << st.st_size << ' ' << mtime_of(st) << '\n';
  }
  if (::rename(part.c_str(), record.c_str()) != 0) ::unlink(part.c_str());
}

// False when the copy changed after its download (its size or modification time differ from
// the record beside it, and so does its SHA-256): it is then removed, to be downloaded again.
// A copy whose time alone changed is hashed once, and its record updated.
bool still_as_downloaded(int fd, const std::string& path) {
  std::ifstream in(checksum_path(path));
  std::string sha256;
  int64_t bytes = -1, mtime_ns = -1;
  struct stat st {};
  if (!(in >> sha256 >> bytes >> mtime_ns) || ::fstat(fd, &st) != 0) return true;
  if (st.st_size == bytes && mtime_of(st) == mtime_ns) return true;
  const std::string now = sha256_of_file(path);
  if (now == sha256) {
    write_checksum(fd, path, sha256);
    return true;
  }
  mploader::detail::log().warn(
      "mploader: the shard cache's copy \"{}\" changed after it was downloaded (now {} bytes, "
      "SHA-256 {}; downloaded: {} bytes, {}): it is removed and downloaded again",
      path, static_cast<int64_t>(st.st_size), now, bytes, sha256);
  ::unlink(path.c_str());
  ::unlink(checksum_path(path).c_str());
  return false;
}

// One file of the folder, as the space count sees it.
struct Entry {
  std::string name;
  int64_t bytes;
  int64_t used_ns;  // its last use: the access time, which every lease sets
};

std::vector<Entry> list_folder(const std::string& dir) {
  std::vector<Entry> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || ends_with(name, ".lock")) continue;
    struct stat st {};
    if (::stat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back(Entry{name, static_cast<int64_t>(st.st_size),
                        static_cast<int64_t>(st.st_atim.tv_sec) * 1000000000 +
                            st.st_atim.tv_nsec});
  }
  ::closedir(d);
  return out;
}

// Removes `path` when no reader leases it; false when one does (or it is gone).
bool evict_if_unused(const std::string& path) {
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0) return false;
  if (flock_retrying(f.get(), LOCK_EX | LOCK_NB) != 0) return false;  // leased
  if (!same_file(f.get(), path)) return false;
  ::unlink(checksum_path(path).c_str());
  return ::unlink(path.c_str()) == 0;
}

// A download whose process died leaves its .part: nobody holds its lock then.
bool remove_if_stale_part(const std::string& dir, const std::string& part) {
  const std::string lock = dir + "/" + part.substr(0, part.size() - 5) + ".lock";
  UniqueFd f(::open(lock.c_str(), O_RDWR | O_CLOEXEC));
  if (f.get() < 0 || flock_retrying(f.get(), LOCK_EX | LOCK_NB) != 0) return false;
  return ::unlink((dir + "/" + part).c_str()) == 0;
}

}  // namespace

int64_t parse_byte_size(const std::string& text) {
  if (text.empty()) return -1;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || !(value >= 0) || !std::isfinite(value)) return -1;
  std::string unit(end);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
  static const std::string units = "KMGTP";
  double scale = 1;
  if (unit.size() == 1) {
    const char letter = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    const size_t at = units.find(letter);
    if (at == std::string::npos) return -1;
    scale = std::pow(1024.0, static_cast<double>(at + 1));
  } else if (!unit.empty()) {
    return -1;
  }
  const double bytes = value * scale;
  return bytes >= 9.0e18 ? -1 : static_cast<int64_t>(bytes);
}

CacheConfig resolve_cache_config(const RemoteOptions& options) {
  CacheConfig c;
  c.dir = options.cache_dir;
  if (c.dir.empty()) {
    if (const char* env = std::getenv("MPLOADER_CACHE_DIR"); env != nullptr && *env != '\0') {
      c.dir = env;
    } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg) {
      c.dir = std::string(xdg) + "/mploader/shards";
    } else {
      const char* home = std::getenv("HOME");
      c.dir = std::string(home != nullptr && *home ? home : "/tmp") + "/.cache/mploader/shards";
    }
  }
  if (options.cache_limit_bytes < 0) {
    throw OptionError("cache_limit_bytes", "RemoteOptions::cache_limit_bytes is " +
                      std::to_string(options.cache_limit_bytes) + ": give a size in bytes, "
                      "or 0 for MPLOADER_CACHE_LIMIT (else the file system's free space)");
  }
  c.limit_bytes = options.cache_limit_bytes;
  const char* env = std::getenv("MPLOADER_CACHE_LIMIT");
  if (c.limit_bytes == 0 && env != nullptr && *env != '\0') {
    c.limit_bytes = parse_byte_size(env);
    if (c.limit_bytes < 0) {
      throw OptionError("MPLOADER_CACHE_LIMIT", std::string("MPLOADER_CACHE_LIMIT is \"") + env +
                        "\": give a size such as 20G, 512M or a number of bytes");
    }
  }
  return c;
}

ShardCache::ShardCache(CacheConfig config) : config_(std::move(config)) {
  std::error_code error;
  std::filesystem::create_directories(config_.dir, error);
  if (error || ::access(config_.dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    throw OptionError("cache_dir", "the shard cache folder \"" + config_.dir + "\" cannot be " +
                      "made or written (" + (error ? error.message() : std::strerror(errno)) +
                      "): set RemoteOptions::cache_dir (or MPLOADER_CACHE_DIR) to a writable "
                      "folder");
  }
}

std::string ShardCache::key_of(const std::string& url, const ExpectedObject& expect) {
  mploader::detail::Fnv1a hash;
  hash.add(url);
  hash.add(static_cast<uint64_t>(expect.bytes));
  hash.add(expect.sha256);
  hash.add(expect.version);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash.value()));
  std::string base = url.substr(url.rfind('/') + 1);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  if (base.size() > 80) base.resize(80);
  if (ends_with(base, ".part") || ends_with(base, ".lock")) base += "_";  // not ours to confuse
  return std::string(hex) + "-" + base;
}

std::unique_ptr<CachedShard> ShardCache::try_lease(const std::string& path) const {
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0) return nullptr;
  // Shared: many readers at once; an evictor's exclusive try then fails. Checked after the
  // lock: an evictor may have unlinked the file between our open and our lock.
  if (flock_retrying(f.get(), LOCK_SH) != 0 || !same_file(f.get(), path)) return nullptr;
  if (!still_as_downloaded(f.get(), path)) return nullptr;
  // Its last use, for eviction: the access time alone, so that the modification time stays
  // the download's, which the checksum beside it records (best effort: another user's file).
  const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::futimens(f.get(), times);
  return std::make_unique<CachedShard>(path, std::move(f));
}

std::unique_ptr<CachedShard> ShardCache::acquire(const std::string& url,
                                                 const ExpectedObject& expect,
                                                 Transport& transport,
                                                 const RemoteOptions& options) {
  const std::string key = key_of(url, expect);
  const std::string path = config_.dir + "/" + key;
  for (int tries = 0;; ++tries) {
    if (auto leased = try_lease(path)) return leased;
    UniqueFd lock(::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (lock.get() < 0 || flock_retrying(lock.get(), LOCK_EX) != 0) {
      throw CacheError("the shard cache \"" + config_.dir + "\" cannot lock " + key +
                               ".lock (" + std::strerror(errno) + "): is the folder writable, "
                               "and on a file system with flock (not every network one has)?");
    }
    // Whoever held the lock before us may have finished the download.
    if (auto leased = try_lease(path)) return leased;
    if (tries < 3 && ::access(path.c_str(), F_OK) == 0) continue;  // evicted as we leased
    return download(url, expect, transport, options);
  }
}

std::unique_ptr<CachedShard> ShardCache::download(const std::string& url,
                                                  const ExpectedObject& expect,
                                                  Transport& transport,
                                                  const RemoteOptions& options) {
  if (auto it = refused_.find(url); it != refused_.end()) {
    throw TransportError(it->second.first + " (asked once; this process does not ask again: "
                         "restart the job once the object is there)", false, it->second.second);
  }
  const std::string path = config_.dir + "/" + key_of(url, expect);
  const std::string part = path + ".part";
  UniqueFd f = reserve(part, std::max<int64_t>(expect.bytes, 0));
  try {
    std::string sha256;
    int64_t bytes = 0;
    try {
      bytes = download_to_fd(transport, url, expect, f.get(), options, &sha256);
    } catch (const TransportError& e) {
      const int status = e.http_status();
      if (status == 404 || status == 403 || status == 401) {
        refused_.emplace(url, std::make_pair(std::string(e.what()), status));
      }
      throw;
    }
    if (::ftruncate(f.get(), bytes) != 0 || ::fdatasync(f.get()) != 0) {
      throw CacheError("the shard cache cannot finish \"" + part + "\" (" +
                               std::strerror(errno) + "): is the file system full?");
    }
    // The lease is taken before the name appears, so no evictor can come between.
    flock_retrying(f.get(), LOCK_SH);
    if (::rename(part.c_str(), path.c_str()) != 0) {
      throw CacheError("the shard cache cannot rename \"" + part + "\" into place (" +
                               std::strerror(errno) + ")");
    }
    write_checksum(f.get(), path, sha256);
    ++downloads_;
    downloaded_bytes_ += bytes;
  } catch (...) {
    ::unlink(part.c_str());
    throw;
  }
  return std::make_unique<CachedShard>(path, std::move(f));
}

namespace {

// What fills the folder, for the message when no room can be made.
std::string what_holds(const std::string& dir, const std::vector<Entry>& entries) {
  int64_t leased = 0, leased_bytes = 0, parts = 0, part_bytes = 0;
  for (const Entry& e : entries) {
    if (ends_with(e.name, ".part")) {
      ++parts;
      part_bytes += e.bytes;
    } else {
      ++leased;  // whatever is left after eviction is in use
      leased_bytes += e.bytes;
    }
  }
  std::string out = std::to_string(leased) + " shard(s) that readers hold open now (" +
                    human_bytes(static_cast<uint64_t>(leased_bytes)) + ") and " +
                    std::to_string(parts) + " download(s) in progress (" +
                    human_bytes(static_cast<uint64_t>(part_bytes)) + ")";
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0) {
    out += "; the file system has " +
           human_bytes(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize) + " free";
  }
  return out;
}

int64_t total_bytes(const std::vector<Entry>& entries) {
  int64_t sum = 0;
  for (const Entry& e : entries) sum += e.bytes;
  return sum;
}

// Evicts the least recently used shard no reader holds; false when there is none.
bool evict_one(const std::string& dir, std::vector<Entry>& entries) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used_ns < b.used_ns; });
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (ends_with(it->name, ".part")) continue;
    if (evict_if_unused(dir + "/" + it->name)) {
      entries.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace

ipc::UniqueFd ShardCache::reserve(const std::string& part, int64_t bytes) {
  const std::string& dir = config_.dir;
  UniqueFd cache_lock(::open((dir + "/" + kCacheLock).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (cache_lock.get() >= 0) flock_retrying(cache_lock.get(), LOCK_EX);
  std::vector<Entry> entries = list_folder(dir);
  entries.erase(std::remove_if(entries.begin(), entries.end(), [&](const Entry& e) {
                  return ends_with(e.name, ".part") && remove_if_stale_part(dir, e.name);
                }), entries.end());
  auto refuse = [&](const std::string& why) {
    throw CacheError(
        "the shard cache \"" + dir + "\" cannot make room for " +
        human_bytes(static_cast<uint64_t>(bytes)) + " (" + why + "): it holds " +
        what_holds(dir, entries) + ", and no shard in it can be evicted. Raise "
        "cache_limit_bytes (MPLOADER_CACHE_LIMIT), point cache_dir (MPLOADER_CACHE_DIR) at a "
        "larger file system, or run fewer readers on this cache at once");
  };
  if (config_.limit_bytes > 0) {
    if (bytes > config_.limit_bytes) {
      throw CacheError("the shard cache \"" + dir + "\" cannot hold a shard of " +
                       human_bytes(static_cast<uint64_t>(bytes)) + ": its limit is " +
                       human_bytes(static_cast<uint64_t>(config_.limit_bytes)) + ". Raise "
                       "cache_limit_bytes (MPLOADER_CACHE_LIMIT) to at least twice the largest "
                       "shard for each worker reading through it");
    }
    while (total_bytes(entries) + bytes > config_.limit_bytes) {
      if (!evict_one(dir, entries)) {
        refuse("the limit is " + human_bytes(static_cast<uint64_t>(config_.limit_bytes)));
      }
    }
  }
  UniqueFd f(::open(part.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (f.get() < 0) refuse(std::string("cannot create its .part: ") + std::strerror(errno));
  // Allocated now, so that a full file system shows here, where eviction can help, and the
  // space counts for the next process that reserves.
  while (bytes > 0) {
    const int rc = ::posix_fallocate(f.get(), 0, bytes);
    if (rc == 0) break;
    if (rc != ENOSPC && rc != EFBIG) {
      if (rc == EOPNOTSUPP || rc == EINVAL) break;  // cannot reserve here: write and see
      refuse(std::string("reserving it failed: ") + std::strerror(rc));
    }
    if (!evict_one(dir, entries)) {
      ::unlink(part.c_str());
      refuse("the file system is full");
    }
  }
  return f;
}

}  // namespace mploader::remote::detail
