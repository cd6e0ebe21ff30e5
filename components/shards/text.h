// Text for the shards' error messages.
#pragma once

#include "util/errors.h"

#include <cstdio>
#include <string>

namespace mploader::shards::detail {

using mploader::detail::in_quotes;  // the library's one way of quoting a name in a message

// `bytes` with every byte outside printable ASCII as \xNN: a member's data in a message, where
// a NUL would end the text an exception's what() returns.
inline std::string printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

}  // namespace mploader::shards::detail
