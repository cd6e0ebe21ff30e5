// Worker deaths explained: each fault is injected in a real worker, and the test checks the
// cause, the worker, the in-flight indices, how fast the loop heard of it, the crash report,
// and that no process is left.
#include "crash_test_support.h"
#include "mapped_file_dataset.h"
#include "memory_cgroup.h"
#include "tmpfs_mount.h"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/mman.h>

#include <fstream>
#include <regex>
#include <set>
#include <thread>

namespace test_crashes {

using namespace mploader;
using namespace crash_testing;
using testing_datasets::FaultyDataset;
using Fault = FaultyDataset::Fault;

namespace {

Outcome crash_with(Fault fault, int signal = SIGKILL, const std::string& path = "/dev/shm") {
  const std::string dir = fresh_dir();
  auto data = std::make_shared<FaultyDataset>(200, 47, fault, signal, path);
  Outcome out = run_until_crash(data, crash_options(2, dir));
  for (int pid : out.pids) CHECK(process_gone(pid));
  return out;
}

bool dir_has_entry_with(const std::string& dir, const std::string& part) {
  bool found = false;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) found |= std::string(e->d_name).find(part) != std::string::npos;
    closedir(d);
  }
  return found;
}

void check_common(const Outcome& out, DeathCause cause, const char* cause_name) {
  REQUIRE(out.threw);
  CHECK(out.summary.cause == cause);
  CHECK(out.summary.worker_id >= 0);
  CHECK(contains(out.summary.in_flight_indices, 47));
  // Noticed while the loop waits, so reported at once: well under a second on an idle machine.
  // The deadline holds on a loaded one too; a death the loop missed would hang it for good.
  CHECK(out.seconds < 10.0);
  REQUIRE(out.report.is_object());
  CHECK(out.report["cause"] == cause_name);
  CHECK(out.report["worker"]["id"] == out.summary.worker_id);
  CHECK(out.report["worker"]["pid"] == out.summary.pid);
  CHECK_THAT(out.message, Catch::Contains(out.summary.report_path) &&
                              Catch::Contains("Remedy:") &&
                              Catch::Contains("worker " + std::to_string(out.summary.worker_id)));
}

}  // namespace

TEST_CASE("crash: segfault in dataset code, with symbolized frames", "[crash][process]") {
  Outcome out = crash_with(Fault::kSegv);
  check_common(out, DeathCause::kSegfault, "segfault");
  CHECK(out.summary.signal == SIGSEGV);
  CHECK(out.report["crash_record"]["sample_index"] == 47);
  CHECK(out.report["crash_record"]["phase"] == "Dataset::get");
  CHECK(out.report["crash_record"]["fault_address"] == 0);
  REQUIRE_FALSE(out.report["frames"].empty());  // the first frame is where it faulted
  CHECK_THAT(out.report["frames"][0]["function"].get<std::string>(),
             Catch::Contains("write_through_null"));
  CHECK(has_frame(out.report, "FaultyDataset::get"));
  CHECK_FALSE(has_frame(out.report, "on_fatal_signal"));  // the handler's own frames are cut
  CHECK_THAT(out.message, Catch::Contains("Dataset::get(47)") &&
                              Catch::Contains("SEGV_MAPERR"));
}

TEST_CASE("crash: frames stay symbolized in a worker with thousands of mappings",
          "[crash][process]") {
  // 8,000 one-page anonymous mappings below the program's own (as a sanitizer's shadow, or
  // a dataset that maps many small files, makes them): about 360 KB of /proc/self/maps lines
  // that come before the program and its libraries and name no code. The crash record keeps
  // the lines of mapped files only, so the frames are still named.
  const std::string dir = fresh_dir();
  LoaderOptions o = crash_options(1, dir);
  o.worker_init = [](const WorkerInfo&) {
    constexpr uintptr_t kBase = 0x20000000;
    constexpr size_t kPage = 4096;
    for (uintptr_t i = 0; i < 8000; ++i) {  // a page apart, so that no two merge
      void* at = reinterpret_cast<void*>(kBase + i * 2 * kPage);
      mmap(at, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    }
  };
  Outcome out = run_until_crash(std::make_shared<FaultyDataset>(200, 47, Fault::kSegv), o);
  REQUIRE(out.threw);
  REQUIRE(out.report.is_object());
  CHECK(has_frame(out.report, "FaultyDataset::get"));
  CHECK_THAT(out.report["frames"][0]["function"].get<std::string>(),
             Catch::Contains("write_through_null"));
}

TEST_CASE("crash: integer division by zero", "[crash][process]") {
  Outcome out = crash_with(Fault::kFpe);
  check_common(out, DeathCause::kFloatingPoint, "fpe");
  CHECK(has_frame(out.report, "divide"));
  CHECK_THAT(out.message, Catch::Contains("FPE_INTDIV"));
}

TEST_CASE("crash: abort", "[crash][process]") {
  Outcome out = crash_with(Fault::kAbort);
  check_common(out, DeathCause::kAbort, "abort");
  CHECK(out.summary.signal == SIGABRT);
  CHECK(has_frame(out.report, "FaultyDataset"));
}

TEST_CASE("crash: a shared file mapped past its end is a bus error, not shm_full",
          "[crash][process]") {
  Outcome out = crash_with(Fault::kBusFile, 0, "/dev/shm");
  check_common(out, DeathCause::kBusError, "bus_error");
  CHECK(out.report["crash_record"]["si_code_name"].get<std::string>().find("BUS_ADRERR") == 0);
  CHECK_THAT(out.report["crash_record"]["mapping"].get<std::string>(),
             Catch::Contains("/dev/shm/mploader-test-bus"));
  CHECK_THAT(out.message, Catch::Contains("shorter than its mapping") &&
                              Catch::Contains("free on its tmpfs"));
}

TEST_CASE("crash: a regular file truncated under the dataset's mapping is file_truncated, "
          "with the file, its size and the offset read",
          "[crash][process]") {
  // 8 MiB on the ordinary filesystem, read in 200 windows across the whole file; cut to 1 MiB
  // once the first batch is in: the windows past 1 MiB fault.
  const std::string dir = fresh_dir();
  const std::string path = dir + "/tokens.bin";
  testing_datasets::write_file(path, 8 << 20);
  auto data = std::make_shared<testing_datasets::MappedFileDataset>(path, 200, 4096);
  Outcome out = run_until_crash(data, crash_options(2, dir),
                                [&] { REQUIRE(truncate(path.c_str(), 1 << 20) == 0); });
  for (int pid : out.pids) CHECK(process_gone(pid));
  unlink(path.c_str());
  INFO(out.message);
  REQUIRE(out.threw);
  CHECK(out.summary.cause == DeathCause::kFileTruncated);
  CHECK(out.summary.signal == SIGBUS);
  REQUIRE(out.report.is_object());
  CHECK(out.report["cause"] == "file_truncated");
  CHECK(out.report["crash_record"]["mapping_file_size_bytes"] == 1 << 20);
  CHECK_THAT(out.report["crash_record"]["mapping"].get<std::string>(), Catch::Contains(path));
  CHECK_THAT(out.message, Catch::Contains("'" + path + "'") &&
                              Catch::Contains("holds 1.0 MiB (1048576 bytes) now") &&
                              Catch::Contains("it accessed offset") &&
                              Catch::Contains("truncated while mapped") &&
                              Catch::Contains("rename()"));
  std::smatch offset;
  REQUIRE(std::regex_search(out.message, offset,
                            std::regex(R"(at offset (\d+) of a file of 1048576 bytes)")));
  CHECK(std::stoll(offset[1]) >= 1 << 20);  // past the end, and so no page to give
}

TEST_CASE("crash: a full tmpfs under the dataset's shared file is shm_full",
          "[crash][process][root]") {
  TmpfsMount mount("256k");
  if (!mount.ok()) {
    WARN("skipped: " << mount.why_not());
    return;
  }
  Outcome out = crash_with(Fault::kBusFull, 0, mount.path());
  check_common(out, DeathCause::kShmFull, "shm_full");
  CHECK(out.summary.signal == SIGBUS);
  CHECK_THAT(out.report["crash_record"]["mapping"].get<std::string>(),
             Catch::Contains(mount.path() + "/mploader-test-fill"));
  CHECK_THAT(out.message, Catch::Contains("--shm-size") && Catch::Contains("0 B"));
}

TEST_CASE("crash: SIGKILL from outside is not mistaken for OOM", "[crash][process]") {
  Outcome out = crash_with(Fault::kSignal, SIGKILL);
  check_common(out, DeathCause::kKilled, "killed");
  CHECK(out.report["crash_record"].is_null());  // SIGKILL cannot be caught
  CHECK(out.report["details"]["oom"]["oom_kills_before"] ==
        out.report["details"]["oom"]["oom_kills_after"]);
  CHECK_THAT(out.message, Catch::Contains("no OOM kill"));
}

TEST_CASE("crash: SIGTERM from outside", "[crash][process]") {
  Outcome out = crash_with(Fault::kSignal, SIGTERM);
  check_common(out, DeathCause::kTerminated, "terminated");
}

TEST_CASE("crash: a worker that exits", "[crash][process]") {
  Outcome out = crash_with(Fault::kExit);
  check_common(out, DeathCause::kExit, "exit");
  CHECK(out.summary.exit_code == 3);
}

TEST_CASE("crash: a hang is reported at the timeout with the worker's stack",
          "[crash][process]") {
  const std::string dir = fresh_dir();
  auto o = crash_options(2, dir);
  o.timeout = std::chrono::milliseconds(700);
  auto data = std::make_shared<FaultyDataset>(200, 47, Fault::kHang);
  Loader loader(data, o);
  const auto pids = loader.worker_pids();
  auto start = std::chrono::steady_clock::now();
  try {
    for (;;) {
      start = std::chrono::steady_clock::now();
      if (!loader.next()) break;
    }
    FAIL("expected TimeoutError");
  } catch (const TimeoutError& e) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The timeout fires at 0.7 s and the stack takes a moment more (well under a second idle);
    // the deadline holds on a loaded machine. Without the timeout the hang would last for good.
    CHECK(seconds < 0.7 + 10.0);
    CHECK(e.cause() == DeathCause::kHang);
    CHECK(contains(e.in_flight_indices(), 47));
    std::ifstream in(e.report_path());
    auto report = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(report.is_object());
    CHECK(report["cause"] == "hang");
#if !defined(__SANITIZE_THREAD__)
    // ThreadSanitizer holds asynchronous signals back until the thread leaves the blocking
    // call, which a hung worker never does: no stack arrives before the kill there.
    CHECK(has_frame(report, "FaultyDataset::misbehave"));
#endif
    CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::get(47)") &&
                                          Catch::Contains("700 ms"));
  }
  CHECK_THROWS_AS(loader.next(), TimeoutError);  // stays failed
  (void)pids;
}

TEST_CASE("crash: a dataset exception stays a typed WorkerError, not a crash",
          "[crash][process]") {
  auto data = std::make_shared<FaultyDataset>(200, 47, Fault::kThrow);
  Loader loader(data, crash_options(2, fresh_dir()));
  CHECK_THROWS_AS([&] { while (loader.next()) {} }(), WorkerError);
}

TEST_CASE("crash: the death is noticed and reported while the loop is busy elsewhere",
          "[crash][process]") {
  const std::string dir = fresh_dir();
  auto data = std::make_shared<FaultyDataset>(200, 1000, Fault::kThrow);
  Loader loader(data, crash_options(2, dir));
  REQUIRE(loader.next());
  const int victim = loader.worker_pids()[1];
  kill(victim, SIGKILL);
  // "Training", not calling next, until the report appears: within a second on an idle machine;
  // 30 s is for a loaded one, and a report that waits for next() would never come.
  const std::string expected_part = "-worker1-pid" + std::to_string(victim);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool found = false;
  while (!found && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    found = dir_has_entry_with(dir, expected_part);
  }
  CHECK(found);
  CHECK_THROWS_AS([&] { while (loader.next()) {} }(), WorkerCrashed);
}

TEST_CASE("crash: OOM kill in a memory cgroup is classified with the limit and RSS",
          "[crash][process][root]") {
  MemoryCgroup cgroup(192ll << 20);
  if (!cgroup.ok()) {
    WARN("skipped: " << cgroup.why_not());
    return;
  }
  const std::string dir = fresh_dir();
  auto data = std::make_shared<FaultyDataset>(200, 47, Fault::kAllocate);
  REQUIRE(cgroup.enter());
  std::unique_ptr<Loader> loader;
  try {
    loader = std::make_unique<Loader>(data, crash_options(1, dir));
  } catch (...) {
    cgroup.leave();
    throw;
  }
  REQUIRE(cgroup.leave());  // only the worker stays under the limit
  try {
    while (loader->next()) {
    }
    FAIL("expected WorkerCrashed");
  } catch (const WorkerCrashed& e) {
    CHECK(e.cause() == DeathCause::kOutOfMemory);
    CHECK(e.signal() == SIGKILL);
    CHECK(contains(e.in_flight_indices(), 47));
    std::ifstream in(e.report_path());
    auto report = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(report.is_object());
    CHECK(report["cause"] == "oom");
    CHECK(report["details"]["oom"]["limit_bytes"] == (192ll << 20));
    CHECK(report["details"]["oom"]["oom_kills_after"].get<int64_t>() >
          report["details"]["oom"]["oom_kills_before"].get<int64_t>());
    CHECK_THAT(std::string(e.what()), Catch::Contains("OOM killer") &&
                                          Catch::Contains(cgroup.path()));
  }
  loader.reset();
}

TEST_CASE("crash: reports are never overwritten", "[crash][process]") {
  const std::string dir = fresh_dir();
  std::set<std::string> paths;
  for (int i = 0; i < 2; ++i) {
    auto data = std::make_shared<FaultyDataset>(200, 47, Fault::kExit);
    Outcome out = run_until_crash(data, crash_options(1, dir));
    REQUIRE(out.threw);
    paths.insert(out.summary.report_path);
  }
  CHECK(paths.size() == 2);
}

}  // namespace test_crashes
