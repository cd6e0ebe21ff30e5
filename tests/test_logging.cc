// mploader's log level: set_log_level() takes effect on what the library really logs, wins over
// SPDLOG_LEVEL, and parse_log_level() rejects a typo with a clear error.
#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/logging.h>

#include <catch2/catch.hpp>

#include <ATen/ops/full.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace test_logging {

namespace {

class Ones : public mploader::Dataset {
 public:
  size_t size() const override { return 8; }
  mploader::Sample get(int64_t i) override { return {{"x", at::full({4}, i, at::kLong)}}; }
};

// What reaches stderr (where mploader logs) while a Loader with one worker is built, runs an
// epoch and stops.
std::string logged_by_a_loader() {
  std::fflush(stderr);
  const int saved = dup(2);
  const int capture = memfd_create("stderr", 0);
  REQUIRE((saved >= 0 && capture >= 0 && dup2(capture, 2) == 2));
  {
    mploader::LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 1;
    mploader::Loader loader(std::make_shared<Ones>(), o);
    for (mploader::Batch& b : loader) (void)b;
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  char buf[4096];
  ssize_t n;
  for (off_t at = 0; (n = pread(capture, buf, sizeof buf, at)) > 0; at += n) text.append(buf, n);
  close(capture);
  return text;
}

}  // namespace

TEST_CASE("logging: set_log_level decides what the library logs, over SPDLOG_LEVEL", "[logging]") {
  // SPDLOG_LEVEL asks for everything; the program's call must still win.
  setenv("SPDLOG_LEVEL", "trace", 1);
  mploader::set_log_level(mploader::LogLevel::kWarn);  // creates the logger, reading SPDLOG_LEVEL
  CHECK(mploader::log_level() == mploader::LogLevel::kWarn);
  CHECK(logged_by_a_loader().find("workers,") == std::string::npos);

  mploader::set_log_level(mploader::LogLevel::kDebug);
  CHECK(mploader::log_level() == mploader::LogLevel::kDebug);
  const std::string debug = logged_by_a_loader();
  INFO(debug);
  CHECK(debug.find("mploader: 1 workers, ") != std::string::npos);

  mploader::set_log_level(mploader::LogLevel::kOff);
  CHECK(logged_by_a_loader().find("mploader") == std::string::npos);
  mploader::set_log_level(mploader::LogLevel::kInfo);
}

TEST_CASE("logging: parse_log_level accepts spdlog's names and rejects a typo", "[logging]") {
  CHECK(mploader::parse_log_level("DEBUG") == mploader::LogLevel::kDebug);
  CHECK(mploader::parse_log_level("warning") == mploader::LogLevel::kWarn);
  CHECK(mploader::parse_log_level("off") == mploader::LogLevel::kOff);
  try {
    mploader::parse_log_level("verbose");
    FAIL("no error for 'verbose'");
  } catch (const mploader::OptionError& e) {
    CHECK(e.option() == "log_level");
    CHECK(std::string(e.what()).find("unknown log level 'verbose'; use trace, debug") !=
          std::string::npos);
  }
}

}  // namespace test_logging
