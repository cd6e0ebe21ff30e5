// libhdf5's error stack as text, and keeping it off stderr.
#include "hdf5/h5_handle.h"

#include <vector>

namespace mploader::hdf5::detail {

void quiet_hdf5_errors() {
  // Per thread: in a thread-safe libhdf5 (Debian's) H5E_DEFAULT is the calling thread's stack.
  thread_local bool quiet = false;
  if (!quiet) quiet = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
}

namespace {

herr_t collect_message(unsigned /*n*/, const H5E_error2_t* entry, void* data) {
  auto* messages = static_cast<std::vector<std::string>*>(data);
  if (entry->desc != nullptr && entry->desc[0] != '\0') messages->emplace_back(entry->desc);
  return 0;
}

}  // namespace

std::string error_stack_text(std::vector<std::string>* all) {
  std::vector<std::string> messages;
  // Upward: the innermost call first, where libhdf5 says what it found ("truncated file").
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_message, &messages);
  H5Eclear2(H5E_DEFAULT);
  std::string text;
  for (size_t i = 0; i < messages.size() && i < 3; ++i) {
    if (!text.empty()) text += "; ";
    text += messages[i];
  }
  if (all != nullptr) *all = std::move(messages);
  return text;
}

}  // namespace mploader::hdf5::detail
