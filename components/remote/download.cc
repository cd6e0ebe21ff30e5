// download_to_fd: a download's retries, resumption and checks (download.h).
#include "remote/download.h"

#include "remote/sha256.h"
#include "util/log.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

namespace mploader::remote::detail {
namespace {

// Exponential backoff from 0.1 s, at most 5 s, with jitter so that many workers retrying
// one server do not return together.
std::chrono::milliseconds backoff(int attempt) {
  static thread_local std::minstd_rand jitter(static_cast<unsigned>(::getpid()));
  const double base = std::min(5000.0, 100.0 * std::pow(2.0, attempt));
  return std::chrono::milliseconds(
      static_cast<int64_t>(base * (0.75 + 0.5 * (jitter() % 1000) / 1000.0)));
}

void write_all(int fd, const char* data, size_t n, int64_t at, const std::string& url) {
  while (n > 0) {
    const ssize_t done = ::pwrite(fd, data, n, at);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) {
      throw TransportError("GET " + url + ": cannot write the download to the cache (" +
                           std::strerror(errno) + ", at byte " + std::to_string(at) +
                           "): free space in the cache folder or lower cache_limit_bytes",
                           false, 0);
    }
    data += done;
    n -= static_cast<size_t>(done);
    at += done;
  }
}

// The download's progress over its tries.
struct Progress {
  int64_t written = 0;
  int64_t total = -1;  // the object's size, from the first response (or the manifest)
  std::string etag;           // the first response's, which every later one must have
  std::string last_modified;  // likewise, when the server sends no ETag
  Sha256 hash;
};

// Servers may ignore If-Match (and proxies drop it): a resumed read is checked here too, so
// that bytes of two versions of the object are never spliced into one download.
void check_same_object(const std::string& url, const ObjectInfo& info, const Progress& p) {
  std::string was, now, what;
  if (!p.etag.empty() && !info.etag.empty()) {
    was = p.etag, now = info.etag, what = "ETag";
  } else if (!p.last_modified.empty() && !info.last_modified.empty()) {
    was = p.last_modified, now = info.last_modified, what = "Last-Modified";
  }
  if (was == now) return;
  throw TransportError("GET " + url + " (from byte " + std::to_string(p.written) + "): the "
                       "object changed while it was downloaded: its " + what + " was " + was +
                       " and is " + now + " now (the server ignored If-Match); the bytes "
                       "written so far are dropped. Build the dataset again once the object "
                       "no longer changes", false, 0);
}

void check_size(const std::string& url, const ObjectInfo& info, const ExpectedObject& expect,
                Progress& p) {
  if (info.bytes >= 0 && expect.bytes >= 0 && info.bytes != expect.bytes) {
    throw TransportError("GET " + url + ": the object has " + std::to_string(info.bytes) +
                         " bytes but the manifest says " + std::to_string(expect.bytes) +
                         ": it changed since the manifest was written; write the manifest "
                         "again (mploader-manifest) and build the dataset again", false, 0);
  }
  if (p.written > 0) check_same_object(url, info, p);
  if (p.total >= 0 && info.bytes >= 0 && info.bytes != p.total) {
    throw TransportError("GET " + url + " (from byte " + std::to_string(p.written) + "): the "
                         "object had " + std::to_string(p.total) + " bytes and has " +
                         std::to_string(info.bytes) + " now: it changed while it was "
                         "downloaded. Build the dataset again once it no longer changes",
                         false, 0);
  }
  if (p.total < 0) p.total = info.bytes >= 0 ? info.bytes : expect.bytes;
  if (p.written == 0) {
    p.etag = info.etag;
    p.last_modified = info.last_modified;
  }
}

void read_once(Transport& transport, const std::string& url, const ExpectedObject& expect,
               int fd, Progress& p) {
  ReadRequest request;
  request.url = url;
  request.offset = p.written;
  request.if_match = p.written > 0 ? p.etag : "";
  transport.read(
      request, [&](const ObjectInfo& info) { check_size(url, info, expect, p); },
      [&](const char* data, size_t n) {
        if (p.total >= 0 && p.written + static_cast<int64_t>(n) > p.total) {
          throw TransportError("GET " + url + ": the body runs past the " +
                               std::to_string(p.total) + " bytes the object has: the server "
                               "sent a different object; check the URL", false, 0);
        }
        write_all(fd, data, n, p.written, url);
        p.hash.update(data, n);
        p.written += static_cast<int64_t>(n);
      });
  if (p.total >= 0 && p.written < p.total) {
    throw TransportError("GET " + url + ": the response ended at byte " +
                         std::to_string(p.written) + " of " + std::to_string(p.total) +
                         " (cut short)", true, 0);
  }
}

}  // namespace

namespace {
// Thrown from on_info to stop a read once the headers said the size.
struct SizeKnown {};
}  // namespace

int64_t object_size(Transport& transport, const std::string& url) {
  int64_t bytes = -1;
  try {
    transport.read(
        ReadRequest{url, 0, 1, ""},  // one byte: the headers carry the size
        [&bytes](const ObjectInfo& info) {
          bytes = info.bytes;
          throw SizeKnown{};
        },
        [](const char*, size_t) {});
  } catch (const SizeKnown&) {
  }
  if (bytes < 0) {
    throw TransportError("GET " + url + ": the server did not say the object's size "
                         "(no Content-Length); serve it with one", false, 0);
  }
  return bytes;
}

int64_t download_to_fd(Transport& transport, const std::string& url, const ExpectedObject& expect,
                       int fd, const RemoteOptions& options, std::string* sha256) {
  Progress p;
  for (int attempt = 0;; ++attempt) {
    try {
      read_once(transport, url, expect, fd, p);
      break;
    } catch (const TransportError& e) {
      if (!e.transient() || attempt >= options.max_retries) {
        if (attempt == 0) throw;
        throw TransportError(std::string(e.what()) + " (gave up after " +
                             std::to_string(attempt + 1) + " tries; RemoteOptions::max_retries "
                             "is " + std::to_string(options.max_retries) + ")",
                             false, e.http_status());
      }
      const auto wait = backoff(attempt);
      mploader::detail::log().warn("{}; retrying in {} ms, from byte {} (try {} of {})",
                                   e.what(), wait.count(), p.written, attempt + 2,
                                   options.max_retries + 1);
      std::this_thread::sleep_for(wait);
    }
  }
  const std::string got = p.hash.hex();
  if (sha256 != nullptr) *sha256 = got;
  if (!expect.sha256.empty()) {
    if (got != expect.sha256) {
      throw TransportError("GET " + url + ": the " + std::to_string(p.written) + " bytes "
                           "downloaded have SHA-256 " + got + " but the manifest says " +
                           expect.sha256 + ": the object changed since the manifest was "
                           "written, or the transfer was damaged; write the manifest again if "
                           "the object is meant to change", false, 0);
    }
  }
  return p.written;
}

}  // namespace mploader::remote::detail
