// upload_file (mploader/remote/remote.h): a file's SHA-256 (unless given), then Transport::write, retried
// with backoff after a transient failure; each try sends the whole file again.
#include "remote/sha256.h"

#include <mploader/remote/remote.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace mploader::remote {

void upload_file(const std::string& path, const std::string& url, const RemoteOptions& options,
                 const std::string& sha256) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error("mploader: upload: cannot read \"" + path + "\" (" + std::strerror(errno) +
                ") to upload it to " + url + ".");
  }
  WriteRequest request{url, path, static_cast<int64_t>(st.st_size),
                       sha256.empty() ? detail::sha256_of_file(path) : sha256};
  std::unique_ptr<Transport> transport = make_transport(url, options);
  for (int attempt = 0;; ++attempt) {
    try {
      transport->write(request);
      return;
    } catch (const TransportError& e) {
      if (!e.transient() || attempt >= options.max_retries) {
        throw TransportError(std::string(e.what()) + " (after " + std::to_string(attempt + 1) +
                                 " tries; RemoteOptions::max_retries sets them)",
                             e.transient(), e.http_status());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 5)));
    }
  }
}

}  // namespace mploader::remote
