#include "loader/log.h"

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace mploader::detail {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("mploader")) return existing;
    auto created = spdlog::stderr_color_mt("mploader");
    spdlog::cfg::load_env_levels();  // applies SPDLOG_LEVEL to registered loggers
    return created;
  }();
  return *logger;
}

}  // namespace mploader::detail
