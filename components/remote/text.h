// remote/: the small text steps that headers, INI files, listings and patterns share.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>

namespace mploader::remote::detail {

// `s` without the white space at either end.
inline std::string trimmed(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// A count written as 1 to 18 decimal digits (no sign, no space); -1 for anything else, so that
// no text from a server can overflow it.
inline int64_t parse_count(const std::string& s) {
  if (s.empty() || s.size() > 18) return -1;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  }
  return std::stoll(s);
}

}  // namespace mploader::remote::detail
