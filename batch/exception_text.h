// The exception being handled, as text for a person: its demangled type and its message. Used
// wherever dataset or collate code throws (in a worker, or in-process with num_workers == 0), so
// that WorkerError says the same thing whichever way it was loaded.
#pragma once

#include <string>
#include <utility>

namespace mploader::detail {

// Call inside a catch block. ("std::runtime_error", what()); ("unknown", ...) for a throw that
// is not a std::exception.
std::pair<std::string, std::string> describe_current_exception();

}  // namespace mploader::detail
