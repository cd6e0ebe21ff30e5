// remote/: one object downloaded into a file, retried and resumed, then checked.
#pragma once

#include <mploader/remote/remote.h>

#include <cstdint>
#include <string>

namespace mploader::remote::detail {

// What the manifest says the object is: a download that differs is refused.
struct ExpectedObject {
  int64_t bytes = -1;   // -1: unknown (taken from the response)
  std::string sha256;   // lowercase hex, or empty
  std::string version;  // anything else that tells versions apart (a file's mtime), or empty
};

// Writes `url` into `fd` from its first byte. Transient failures are retried up to
// options.max_retries times with exponential backoff, each resuming from the last byte
// written, with If-Match on the first response's ETag so that a resumed read cannot splice
// two versions. Checks the size against the response and `expect`, and the SHA-256 when
// `expect` has one. Returns the bytes written. Throws TransportError naming the URL, what
// went wrong on the last try and how many tries were made.
// The size of the object at `url`, from the headers of a one-byte ranged read (no download).
// Throws TransportError naming the URL for a failed read or a server that does not say.
int64_t object_size(Transport& transport, const std::string& url);

// `sha256`, when given, receives the SHA-256 of the bytes written (lowercase hex).
int64_t download_to_fd(Transport& transport, const std::string& url, const ExpectedObject& expect,
                       int fd, const RemoteOptions& options, std::string* sha256 = nullptr);

}  // namespace mploader::remote::detail
