#include "tools/soak/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace bench::soak {
namespace {

// The start of the line Dispatcher::restart_worker logs for each replaced worker; the start
// and parts of the one Supervisor::gather logs for each death.
constexpr std::string_view kRestartLine = "mploader: restarted worker ";
constexpr std::string_view kDeathLine = "mploader: worker ";
constexpr std::string_view kDied = ") died [";
constexpr std::string_view kPid = "(pid ";
constexpr std::string_view kKilledFromOutside = "died [killed]: killed by SIGKILL from outside";

std::atomic<int64_t> logged_restarts{0};
std::atomic<int64_t> logged_sigkill_deaths{0};
std::atomic<int64_t> logged_other_deaths{0};
std::mutex diagnosed_mutex;
std::set<int> diagnosed_pids;

bool starts_with(std::string_view text, std::string_view start) {
  return text.substr(0, start.size()) == start;
}

// Tallies a death line; false for any other line.
bool tally_death(std::string_view text) {
  if (!starts_with(text, kDeathLine) || text.find(kDied) == std::string_view::npos) return false;
  const size_t pid_at = text.find(kPid);
  if (pid_at != std::string_view::npos) {
    const std::string digits(text.substr(pid_at + kPid.size(), 16));
    std::lock_guard<std::mutex> lock(diagnosed_mutex);
    diagnosed_pids.insert(std::atoi(digits.c_str()));
  }
  const bool sigkill = text.find(kKilledFromOutside) != std::string_view::npos;
  (sigkill ? logged_sigkill_deaths : logged_other_deaths).fetch_add(1, std::memory_order_relaxed);
  return sigkill;
}

class TallyingSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    const std::string_view text(message.payload.data(), message.payload.size());
    if (starts_with(text, kRestartLine)) {
      logged_restarts.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (tally_death(text)) return;
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
  }
  void flush_() override { std::cerr.flush(); }
};

}  // namespace

LoaderLogTally& LoaderLogTally::install() {
  static LoaderLogTally* tally = [] {
    auto logger = std::make_shared<spdlog::logger>("mploader", std::make_shared<TallyingSink>());
    spdlog::register_logger(logger);
    return new LoaderLogTally();
  }();
  return *tally;
}

int64_t LoaderLogTally::restarts() const {
  return logged_restarts.load(std::memory_order_relaxed);
}

int64_t LoaderLogTally::sigkill_deaths() const {
  return logged_sigkill_deaths.load(std::memory_order_relaxed);
}

int64_t LoaderLogTally::other_deaths() const {
  return logged_other_deaths.load(std::memory_order_relaxed);
}

bool LoaderLogTally::diagnosed(int pid) const {
  std::lock_guard<std::mutex> lock(diagnosed_mutex);
  return diagnosed_pids.count(pid) != 0;
}

void LoaderLogTally::forget(int pid) {
  std::lock_guard<std::mutex> lock(diagnosed_mutex);
  diagnosed_pids.erase(pid);
}

}  // namespace bench::soak
