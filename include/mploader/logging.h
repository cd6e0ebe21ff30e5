/// @file
/// How much mploader logs. Its messages (warnings about the machine, restarted workers,
/// overflowing batches; debug details of the rings) go through an spdlog logger named
/// "mploader" that writes to stderr, so a program's stdout stays clean.
///
/// The level comes from, in order of precedence:
///  1. set_log_level(), when the program calls it (for example from its own --log-level flag);
///  2. the environment variable SPDLOG_LEVEL (`SPDLOG_LEVEL=debug`, or
///  `SPDLOG_LEVEL=mploader=debug`
///     for this logger alone), read when the logger is first used;
///  3. spdlog's default, info.
///
/// A program may also register its own spdlog logger named "mploader" before the first Loader
/// to send the messages elsewhere; these functions then act on that logger.
///
/// Forked workers inherit the level in force when they start. Spawned and forkserver workers
/// are new programs: they take SPDLOG_LEVEL only.
///
/// Thread-safety: all functions may be called from any thread at any time.
#pragma once

#include <string>

namespace mploader {

/// Levels of mploader's logger, from the most verbose; kOff silences it.
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

/// Sets the level of mploader's logger, overriding SPDLOG_LEVEL, from now on in this process
/// (and in workers forked after the call).
void set_log_level(LogLevel level);

/// The level in force now.
LogLevel log_level();

/// Parses "trace", "debug", "info", "warn" (or "warning"), "error", "critical" or "off", in
/// any case. Throws OptionError naming "log_level", with the accepted names, for anything else.
LogLevel parse_log_level(const std::string& text);

}  // namespace mploader
