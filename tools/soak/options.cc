// CLI11 reads every option as text; the parsers here check it, so that each mistake gets one
// line naming the option and the fix, as in mploader-bench.
#include "tools/soak/options.h"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <vector>

namespace bench::soak {
namespace {

// Values above this are surely typos.
constexpr int64_t kMaxCount = int64_t{1} << 31;

int64_t parse_count(const std::string& option, const std::string& text, int64_t min,
                    int64_t max, const std::string& example) {
  const std::string want = "give a whole number from " + std::to_string(min) + " to " +
                           std::to_string(max) + ", e.g. " + option + " " + example;
  if (text.empty() || text.find_first_not_of("-+0123456789") != std::string::npos) {
    throw SoakUsageError(option + ": '" + text + "' is not a whole number; " + want);
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  std::string wrong;
  if (*end != '\0') wrong = "'" + text + "' is not a whole number";
  else if (errno == ERANGE || v > max) wrong = text + " is too large";
  else if (v < min) wrong = text + " is too small";
  if (!wrong.empty()) throw SoakUsageError(option + ": " + wrong + "; " + want);
  return v;
}

double parse_probability(const std::string& option, const std::string& text) {
  const std::string want = "give a number from 0 to 1, e.g. " + option + " 0.5";
  char* end = nullptr;
  errno = 0;
  const double p = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(p)) {
    throw SoakUsageError(option + ": '" + text + "' is not a number; " + want);
  }
  if (p < 0 || p > 1) throw SoakUsageError(option + ": " + text + " is not a probability; " + want);
  return p;
}

void require_folder(const std::string& option, const std::string& dir,
                    const std::string& example) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw SoakUsageError(option + ": '" + dir + "' is not a folder; give an existing folder, "
                         "e.g. " + option + " " + example);
  }
}

// The option values as text, with their defaults.
struct RawOptions {
  std::string epochs = "200", workers = "2", samples = "4096", batch_size = "32";
  std::string payload_bytes = "4096", kill_probability = "0.5", max_kills = "2", seed = "1";
  std::string check_from = "10", report_every = "10";
  std::string inject;
};

Injection parse_injection(const std::string& text) {
  const std::vector<std::string>& names = injection_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<Injection>(i + 1);
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw SoakUsageError("--inject: unknown fault '" + text + "'; give one of " + list +
                       ", e.g. --inject fd");
}

void add_options(CLI::App& app, RawOptions& raw, SoakOptions& options) {
  app.option_defaults()->always_capture_default();  // --help shows each default
  app.add_option("--epochs", raw.epochs, "epochs to run");
  app.add_option("--workers", raw.workers, "fork workers of each loader");
  app.add_option("--samples", raw.samples, "samples per epoch, each carrying its index");
  app.add_option("--batch-size", raw.batch_size, "samples per batch");
  app.add_option("--payload-bytes", raw.payload_bytes,
                 "bytes of checked payload per sample beside its index");
  app.add_option("--kill-probability", raw.kill_probability,
                 "chance that an epoch has worker kills (SIGKILL at random batches)");
  app.add_option("--max-kills", raw.max_kills,
                 "kills per epoch at most; also the loaders' max_restarts_per_epoch");
  app.add_option("--seed", raw.seed, "seeds the kill schedule and the shuffling");
  app.add_option("--check-from", raw.check_from,
                 "from this epoch on, fds, threads, children and shm must equal its values and "
                 "RSS stay within 1 % of it");
  app.add_option("--report-every", raw.report_every, "a progress line every this many epochs");
  app.add_option("--inject", raw.inject,
                 "self-test: plant a fault one epoch after --check-from (fd, thread, child, shm, "
                 "rss, lost-batch or duplicate-batch); the soak must then FAIL naming it");
  app.add_option("--shm-dir", options.shm_dir, "tmpfs folder for the rings (default: memfd)");
  app.add_option("--crash-dir", options.crash_dir,
                 "folder for the crash reports of killed workers (default: a temporary folder, "
                 "removed at the end)");
}

void validate(const RawOptions& raw, SoakOptions& o) {
  o.epochs = parse_count("--epochs", raw.epochs, 1, 1000000, "200");
  o.workers = parse_count("--workers", raw.workers, 1, 64, "2");
  o.samples = parse_count("--samples", raw.samples, 1, kMaxCount, "4096");
  o.batch_size = parse_count("--batch-size", raw.batch_size, 1, 65536, "32");
  o.payload_bytes = parse_count("--payload-bytes", raw.payload_bytes, 1, 16 << 20, "4096");
  o.kill_probability = parse_probability("--kill-probability", raw.kill_probability);
  o.max_kills = parse_count("--max-kills", raw.max_kills, 1, 1000, "2");
  o.seed = static_cast<uint64_t>(parse_count("--seed", raw.seed, 0, kMaxCount, "1"));
  o.check_from = parse_count("--check-from", raw.check_from, 1, kMaxCount, "10");
  if (o.check_from > o.epochs) {
    throw SoakUsageError("--check-from: epoch " + std::to_string(o.check_from) +
                         " is after the last one (--epochs " + std::to_string(o.epochs) +
                         "); give an epoch from 1 to " + std::to_string(o.epochs));
  }
  o.report_every = parse_count("--report-every", raw.report_every, 1, kMaxCount, "10");
  if (!raw.inject.empty()) o.inject = parse_injection(raw.inject);
  if (o.inject != Injection::kNone && o.check_from >= o.epochs) {
    throw SoakUsageError("--inject: the fault goes in after epoch --check-from " +
                         std::to_string(o.check_from) + ", and --epochs " +
                         std::to_string(o.epochs) + " ends there; give --epochs " +
                         std::to_string(o.check_from + 1) + " or more");
  }
  if (!o.shm_dir.empty()) require_folder("--shm-dir", o.shm_dir, "/dev/shm");
  if (!o.crash_dir.empty()) require_folder("--crash-dir", o.crash_dir, "/tmp");
}

}  // namespace

bool parse_soak_options(int argc, char** argv, SoakOptions& options) {
  CLI::App app("mploader-soak: many epochs with random worker kills, checking exactly-once "
               "delivery and that fds, threads, children, shared memory and RSS stay flat");
  RawOptions raw;
  add_options(app, raw, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ParseError& e) {
    throw SoakUsageError(std::string(e.what()) + "; see mploader-soak --help");
  }
  validate(raw, options);
  return true;
}

}  // namespace bench::soak
