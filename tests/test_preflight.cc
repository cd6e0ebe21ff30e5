// Preflight: what the loader says about the machine before it starts, with the numbers.
#include "supervise/preflight.h"
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test_preflight {

using namespace mploader;
using mploader::detail::PreflightInput;
using mploader::detail::preflight;

namespace {

PreflightInput roomy_machine() {
  PreflightInput in;
  in.worker_slots = 4;
  in.region_bytes = 40 << 20;
  in.slot_bytes = 12 << 20;
  in.open_fds = 20;
  in.fd_soft_limit = 1024;
  in.fd_hard_limit = 4096;
  in.cpus = 8;
  in.memory_limit = -1;
  in.memory_available = int64_t{16} << 30;
  in.dev_shm_bytes = int64_t{8} << 30;
  return in;
}

bool has(const std::vector<mploader::detail::PreflightFinding>& findings, const std::string& what,
         bool error) {
  for (const auto& f : findings) {
    if (f.what == what && f.error == error) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("preflight: a roomy machine has nothing to say", "[preflight]") {
  CHECK(preflight(roomy_machine()).empty());
}

TEST_CASE("preflight: more workers than CPUs in the affinity mask is a warning",
          "[preflight]") {
  auto in = roomy_machine();
  in.cpus = 2;
  auto findings = preflight(in);
  REQUIRE(has(findings, "cpus", false));
  CHECK_THAT(findings[0].message, Catch::Contains("num_workers = 4") &&
                                      Catch::Contains("2 CPUs") && Catch::Contains("at most 2"));
}

TEST_CASE("preflight: open-file limits", "[preflight]") {
  auto in = roomy_machine();  // 20 open + 4 workers x 6 + 3 = 47 needed
  in.fd_soft_limit = 30;  // the loader raises a soft limit first: here that failed
  auto soft = preflight(in);
  REQUIRE(has(soft, "open_files", true));
  CHECK_THAT(soft[0].message, Catch::Contains("need 47") && Catch::Contains("soft limit is 30") &&
                                  Catch::Contains("ulimit -n 4096"));
  in.fd_hard_limit = 30;
  auto findings = preflight(in);
  REQUIRE(has(findings, "open_files", true));
  CHECK_THAT(findings[0].message, Catch::Contains("hard limit 30") &&
                                      Catch::Contains("RLIMIT_NOFILE") &&
                                      Catch::Contains("Use at most 1 worker,"));
  in.fd_soft_limit = in.fd_hard_limit = 47;  // exactly enough
  CHECK_FALSE(has(preflight(in), "open_files", true));
}

TEST_CASE("preflight: memory limit against rings and batches", "[preflight]") {
  auto in = roomy_machine();
  in.memory_limit = 300 << 20;  // rings 160 MiB + batches 48 MiB > half of it
  auto findings = preflight(in);
  REQUIRE(has(findings, "memory", false));
  CHECK_THAT(findings[0].message, Catch::Contains("OOM killer"));
  in.memory_limit = 100 << 20;  // the rings alone do not fit
  CHECK(has(preflight(in), "memory", true));
}

TEST_CASE("preflight: rings larger than the memory available stop the loader before they are "
          "reserved", "[preflight]") {
  auto in = roomy_machine();
  in.memory_available = 200 << 20;  // rings 160 MiB + batches 48 MiB: tight, but they fit
  auto tight = preflight(in);
  REQUIRE(has(tight, "memory", false));
  CHECK_FALSE(has(tight, "memory", true));
  in.memory_available = 100 << 20;  // the rings alone do not fit
  auto findings = preflight(in);
  REQUIRE(has(findings, "memory", true));
  CHECK_THAT(findings[0].message, Catch::Contains("160.0 MiB (167772160 bytes) of rings") &&
                                      Catch::Contains("Lower batch_size"));
}

TEST_CASE("preflight: a small /dev/shm is pointed out", "[preflight]") {
  auto in = roomy_machine();
  in.dev_shm_bytes = 64 << 20;
  auto findings = preflight(in);
  REQUIRE(has(findings, "dev_shm", false));
  CHECK_THAT(findings[0].message, Catch::Contains("--shm-size"));
  in.shm_dir = "/mnt/big";  // the user chose where shared memory goes: no note
  CHECK_FALSE(has(preflight(in), "dev_shm", false));
}

TEST_CASE("preflight: the real machine is measured", "[preflight]") {
  PreflightInput in;
  mploader::detail::measure_machine(in);
  CHECK(in.open_fds > 0);
  CHECK(in.cpus >= 1);
  CHECK(in.memory_available > 0);
}

TEST_CASE("preflight: a hard open-file limit too low stops the loader at construction",
          "[preflight][process]") {
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    rlimit limit{40, 40};
    setrlimit(RLIMIT_NOFILE, &limit);
    LoaderOptions o;
    o.num_workers = 8;
    o.batch_size = 4;
    try {
      Loader loader(std::make_shared<testing_datasets::CountingDataset>(64), o);
      _exit(1);  // should not get here
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("hard limit 40") != std::string::npos ? 0 : 2);
    }
    _exit(3);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace test_preflight
