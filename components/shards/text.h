// Text for the shards' error messages.
#pragma once

#include <cstdio>
#include <string>

namespace mploader::shards::detail {

// `s` between double quotes, for names in messages. Not "quoted": std::quoted would win
// overload resolution through argument-dependent lookup for a non-const std::string.
inline std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

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
