// The library's logger: spdlog, named "mploader", writing to stderr so that a program's stdout
// (for example JSON results) stays clean. A program may register its own logger under that
// name before the first Loader to redirect it. Level from SPDLOG_LEVEL (e.g. SPDLOG_LEVEL=debug).
#pragma once

#include <spdlog/logger.h>

namespace mploader::detail {

spdlog::logger& log();

}  // namespace mploader::detail
