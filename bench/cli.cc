// mploader-bench command line: CLI11 reads every option as text; the parsers here check it so
// that each mistake gets one line that names the option and says how to fix it.
#include "cli.h"

#include "fmnist_idx.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <sys/stat.h>

namespace bench {

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

// Sizes above this are surely typos (and would overflow byte counts).
constexpr int64_t kMaxCount = int64_t{1} << 31;

}  // namespace

int64_t parse_count(const std::string& option, const std::string& text, int64_t min,
                    const std::string& example) {
  const std::string want = "give a whole number >= " + std::to_string(min) + ", e.g. " +
                           option + " " + example;
  if (text.empty() || text.find_first_not_of("-+0123456789") != std::string::npos) {
    throw UsageError(option + ": '" + text + "' is not a whole number; " + want);
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') throw UsageError(option + ": '" + text + "' is not a whole number; " + want);
  if (errno == ERANGE || v > kMaxCount) {
    throw UsageError(option + ": " + text + " is too large (at most 2^31); " + want);
  }
  if (v < min) {
    throw UsageError(option + ": " + text + (v < 0 ? " is negative; " : " is too small; ") + want);
  }
  return v;
}

std::vector<int64_t> parse_count_list(const std::string& option, const std::string& text,
                                      int64_t min, const std::string& example) {
  const std::string want = "give whole numbers >= " + std::to_string(min) +
                           " separated by commas, e.g. " + option + " " + example;
  if (text.empty()) throw UsageError(option + ": empty list; " + want);
  std::vector<int64_t> values;
  for (const std::string& part : split(text)) {
    if (part.empty()) throw UsageError(option + ": '" + text + "' has an empty item; " + want);
    const int64_t v = parse_count(option, part, min, example);
    if (std::find(values.begin(), values.end(), v) != values.end()) {
      throw UsageError(option + ": " + part + " is listed twice; " + want);
    }
    values.push_back(v);
  }
  return values;
}

std::vector<std::string> parse_name_list(const std::string& option, const std::string& text,
                                         const std::vector<std::string>& allowed) {
  const std::string want = "use one or more of " + join(allowed) + ", separated by commas";
  if (text.empty()) throw UsageError(option + ": empty list; " + want);
  std::vector<std::string> names;
  for (const std::string& part : split(text)) {
    if (std::find(allowed.begin(), allowed.end(), part) == allowed.end()) {
      throw UsageError(option + ": unknown value '" + part + "'; " + want);
    }
    if (std::find(names.begin(), names.end(), part) != names.end()) {
      throw UsageError(option + ": '" + part + "' is listed twice; " + want);
    }
    names.push_back(part);
  }
  return names;
}

namespace {

// The option values as text, with their defaults.
struct RawOptions {
  std::string workload = "fmnist";
  std::string data_dir = kDefaultFmnistDir;
  std::string sample_shape = "3,224,224";
  std::string workers = "2";
  std::string batch_size = "64";
  std::string batches = "200";
  std::string prefetch = "2";
  std::string loader = "mploader,libtorch,inprocess";
  std::string shm_dir;
  bool json = false;
};

void add_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--workload", raw.workload, "synthetic or fmnist (a comma list sweeps)")
      ->capture_default_str();
  app.add_option("--data-dir", raw.data_dir, "folder with the Fashion-MNIST *-ubyte.gz files")
      ->capture_default_str();
  app.add_option("--sample-shape", raw.sample_shape, "shape of a synthetic uint8 image")
      ->capture_default_str();
  app.add_option("--workers", raw.workers, "worker count; a comma list sweeps, e.g. 0,1,2,4")
      ->capture_default_str();
  app.add_option("--batch-size", raw.batch_size, "samples per batch")->capture_default_str();
  app.add_option("--batches", raw.batches, "batches per configuration (>= 2; the first "
                 "counts only for first_batch_s)")->capture_default_str();
  app.add_option("--prefetch", raw.prefetch, "batches in flight per worker")
      ->capture_default_str();
  app.add_option("--loader", raw.loader, "comma list of mploader, libtorch, inprocess, pytorch")
      ->capture_default_str();
  app.add_flag("--json", raw.json, "one JSON object per configuration per line on stdout");
  app.add_option("--shm-dir", raw.shm_dir, "tmpfs folder for mploader's rings (default: memfd)");
  // Any option above may also come from a TOML file (see configs/); the command line wins.
  app.set_config("--config", "", "read options from a TOML file, e.g. configs/synthetic.toml");
  app.allow_config_extras(false);  // a misspelt key is an error, not silently ignored
}

std::vector<int64_t> parse_shape(const std::string& text) {
  const std::string want = "give sizes >= 1 separated by commas, e.g. --sample-shape 3,224,224";
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (const std::string& part : split(text)) {
    try {
      shape.push_back(parse_count("--sample-shape", part, 1, "3"));
    } catch (const UsageError&) {
      throw UsageError("--sample-shape: '" + text + "' is not a shape; " + want);
    }
    elements *= shape.back();
    if (elements > (int64_t{1} << 30)) {
      throw UsageError("--sample-shape: " + text + " is over 2^30 bytes per sample; " + want);
    }
  }
  return shape;
}

void check_data_dir(const Plan& plan) {
  const bool fmnist = std::find(plan.workloads.begin(), plan.workloads.end(), "fmnist") !=
                      plan.workloads.end();
  struct stat st {};
  if (fmnist && (::stat(plan.base.data_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw UsageError("--data-dir: '" + plan.base.data_dir + "' is not a folder; pass the "
                     "folder with the Fashion-MNIST *-ubyte.gz files, or apt-get install "
                     "dataset-fashion-mnist for " + kDefaultFmnistDir);
  }
}

void check_shm_dir(const std::string& dir) {
  struct stat st {};
  if (!dir.empty() && (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw UsageError("--shm-dir: '" + dir + "' is not a folder; give a tmpfs folder such as "
                     "/dev/shm, or leave the option out to use memfd");
  }
}

void validate(const RawOptions& raw, Plan& plan) {
  plan.workloads = parse_name_list("--workload", raw.workload, {"synthetic", "fmnist"});
  plan.loaders =
      parse_name_list("--loader", raw.loader, {"mploader", "libtorch", "inprocess", "pytorch"});
  plan.workers = parse_count_list("--workers", raw.workers, 0, "0,1,2,4");
  plan.base.sample_shape = parse_shape(raw.sample_shape);
  plan.base.batch_size = parse_count("--batch-size", raw.batch_size, 1, "64");
  plan.base.batches = parse_count("--batches", raw.batches, 2, "200");
  plan.base.prefetch = parse_count("--prefetch", raw.prefetch, 1, "2");
  plan.base.data_dir = raw.data_dir;
  plan.base.shm_dir = raw.shm_dir;
  plan.json = raw.json;
  check_data_dir(plan);
  check_shm_dir(plan.base.shm_dir);
}

}  // namespace

bool parse_command_line(int argc, char** argv, Plan& plan) {
  CLI::App app("mploader-bench: throughput of mploader against libtorch's and PyTorch's data "
               "loaders and an in-process ideal", "mploader-bench");
  RawOptions raw;
  add_options(app, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ConfigError& e) {
    throw UsageError("in the --config file: " + std::string(e.what()) +
                     " (an unknown or misspelt key?); keys are the long option names without "
                     "'--', as mploader-bench --help lists them");
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + "; see mploader-bench --help");
  }
  validate(raw, plan);
  return true;
}

}  // namespace bench
