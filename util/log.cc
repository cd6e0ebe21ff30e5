#include "util/log.h"

#include <mploader/errors.h>
#include <mploader/logging.h>

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

namespace mploader {
namespace detail {
namespace {

spdlog::logger& spdlog_logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("mploader")) return existing;
    auto created = spdlog::stderr_color_mt("mploader");
    spdlog::cfg::load_env_levels();  // applies SPDLOG_LEVEL to registered loggers
    return created;
  }();
  return *logger;
}

// LogLevel and spdlog's levels are in the same order, trace to off.
static_assert(static_cast<int>(LogLevel::kTrace) == spdlog::level::trace &&
              static_cast<int>(LogLevel::kOff) == spdlog::level::off);

spdlog::level::level_enum to_spdlog(LogLevel level) {
  return static_cast<spdlog::level::level_enum>(level);
}

}  // namespace

Logger& log() {
  static Logger logger;
  return logger;
}

bool log_enabled(LogLevel level) { return spdlog_logger().should_log(to_spdlog(level)); }

void log_write(LogLevel level, const std::string& message) {
  // As a string view: the line is already formatted, its braces are text.
  spdlog_logger().log(spdlog::source_loc{}, to_spdlog(level), spdlog::string_view_t(message));
}

}  // namespace detail

void set_log_level(LogLevel level) { detail::spdlog_logger().set_level(detail::to_spdlog(level)); }

LogLevel log_level() { return static_cast<LogLevel>(detail::spdlog_logger().level()); }

LogLevel parse_log_level(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::pair<const char*, LogLevel> kNames[] = {
      {"trace", LogLevel::kTrace},       {"debug", LogLevel::kDebug},  {"info", LogLevel::kInfo},
      {"warn", LogLevel::kWarn},         {"warning", LogLevel::kWarn}, {"error", LogLevel::kError},
      {"critical", LogLevel::kCritical}, {"off", LogLevel::kOff}};
  for (const auto& [name, level] : kNames) {
    if (lower == name) return level;
  }
  throw OptionError("log_level", "mploader: unknown log level '" + text +
                                     "'; use trace, debug, info, warn, error, critical or off");
}

}  // namespace mploader
