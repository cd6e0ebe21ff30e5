// Text for the shards' error messages.
#pragma once

#include <string>

namespace mploader::shards::detail {

// `s` between double quotes, for names in messages. Not "quoted": std::quoted would win
// overload resolution through argument-dependent lookup for a non-const std::string.
inline std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

}  // namespace mploader::shards::detail
