// The hook through which mploader::remote serves URLs to the core's datasets
// (remote_files.h).
#include "core/remote_files.h"

#include "util/errors.h"

#include <mploader/errors.h>

#include <atomic>
#include <cctype>
#include <stdexcept>

namespace mploader::detail {
namespace {

// Set during static initialisation, before main(); read by any thread afterwards.
std::atomic<RemoteFileAccess*> installed{nullptr};

}  // namespace

void set_remote_file_access(RemoteFileAccess* access) {
  installed.store(access, std::memory_order_release);
}

RemoteFileAccess* remote_file_access() { return installed.load(std::memory_order_acquire); }

bool names_url(const std::string& name) {
  const size_t colon = name.find("://");
  if (colon == std::string::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    const char c = name[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return name.compare(0, colon, "file") != 0;
}

RemoteFileAccess& require_remote_file_access(const std::string& url, const std::string& who) {
  RemoteFileAccess* access = remote_file_access();
  if (access == nullptr) {
    throw OptionError("path", message(who, "'" + url + "' is a URL, and this program does not "
                                                      "link mploader::remote, which reads URLs",
                                      "Link it (CMake: target_link_libraries(<your target> "
                                      "PRIVATE mploader::remote)), or give a local path"));
  }
  return *access;
}

}  // namespace mploader::detail
