// Text for the messages of a failed batch. The exception being handled, as text for a person:
// its demangled type and its message. Used wherever dataset or collate code throws (in a
// worker, or in-process with num_workers == 0), so that WorkerError says the same thing
// whichever way it was loaded. And the pieces collation and in-place writes name things with.
#pragma once

#include <c10/util/ArrayRef.h>

#include <string>
#include <utility>
#include <vector>

namespace mploader::detail {

// Call inside a catch block. ("std::runtime_error", what()); ("unknown", ...) for a throw that
// is not a std::exception.
std::pair<std::string, std::string> describe_current_exception();

// "[3, 224, 224]".
std::string shape_text(c10::IntArrayRef shape);

// "'image', 'label'"; "none" for no name.
std::string quoted_names(const std::vector<std::string>& names);

}  // namespace mploader::detail
