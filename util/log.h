// util/: leaf helpers with no mploader concept (logging, formatting, version shims, CUDA runtime).
//
// The library's logger: spdlog, named "mploader", writing to stderr so that a program's stdout
// (for example JSON results) stays clean. A program may register its own logger under that
// name before the first Loader to redirect it. Level from SPDLOG_LEVEL (e.g. SPDLOG_LEVEL=debug).
//
// Only log.cc includes spdlog, and CMakeLists.txt compiles it without libtorch's include folders
// (the mploader_log object library). Debian's spdlog is built against Debian's fmt, and
// libtorch 2.x ships fmt headers of its own (2.13: fmt 12) in the include folder every file that
// includes torch has: spdlog's headers there find the wrong fmt and do not compile. So the rest
// of the library formats here, with "{}" placeholders filled in order through operator<<, and
// hands log.cc finished lines.
#pragma once

#include <mploader/logging.h>

#include <sstream>
#include <string>
#include <string_view>

namespace mploader::detail {

/// Whether a message of `level` would be written (the logger's level, SPDLOG_LEVEL included).
bool log_enabled(LogLevel level);
/// Writes one finished line at `level` (log.cc, through spdlog).
void log_write(LogLevel level, const std::string& message);

inline void format_into(std::ostringstream& out, std::string_view pattern) { out << pattern; }

template <typename First, typename... Rest>
void format_into(std::ostringstream& out, std::string_view pattern, const First& first,
                 const Rest&... rest) {
  const size_t at = pattern.find("{}");
  if (at == std::string_view::npos) {  // more arguments than placeholders: the rest are dropped
    out << pattern;
    return;
  }
  out << pattern.substr(0, at) << first;
  format_into(out, pattern.substr(at + 2), rest...);
}

/// `pattern` with each "{}" replaced by the next argument, as operator<< writes it.
template <typename... Args>
std::string format_message(std::string_view pattern, const Args&... args) {
  std::ostringstream out;
  format_into(out, pattern, args...);
  return out.str();
}

class Logger {
 public:
  template <typename... Args>
  void debug(std::string_view pattern, const Args&... args) {
    write(LogLevel::kDebug, pattern, args...);
  }
  template <typename... Args>
  void info(std::string_view pattern, const Args&... args) {
    write(LogLevel::kInfo, pattern, args...);
  }
  template <typename... Args>
  void warn(std::string_view pattern, const Args&... args) {
    write(LogLevel::kWarn, pattern, args...);
  }
  template <typename... Args>
  void error(std::string_view pattern, const Args&... args) {
    write(LogLevel::kError, pattern, args...);
  }

 private:
  template <typename... Args>
  void write(LogLevel level, std::string_view pattern, const Args&... args) {
    if (log_enabled(level)) log_write(level, format_message(pattern, args...));  // lazily
  }
};

Logger& log();

}  // namespace mploader::detail
