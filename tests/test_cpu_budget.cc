// The CPU budget (util/cpu_budget.h): the quota files' texts, a cgroup tree laid out in a
// temporary folder, and a real cgroup with a quota of 1 CPU (root only; skipped, saying why,
// elsewhere). The preflight check and the bench's recommendation read the budget from here.
#include "supervise/preflight.h"
#include "util/cpu_budget.h"

#include <mploader/dataset.h>
#include <mploader/tune.h>

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace test_cpu_budget {

using mploader::detail::cfs_quota;
using mploader::detail::cpu_budget;
using mploader::detail::cpu_max_quota;
using mploader::detail::CpuBudget;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

void make_dirs(const std::string& path) {
  std::string so_far;
  for (size_t at = 1; at != std::string::npos;) {
    at = path.find('/', at + 1);
    so_far = path.substr(0, at);
    mkdir(so_far.c_str(), 0755);
  }
}

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/mploader-cpu-budget-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

bool write_ok(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// A v1 cpu cgroup below this process's own, with a quota of one CPU; empty when it cannot be
// made, with the reason in `why`.
std::string one_cpu_cgroup_v1(std::string& why) {
  if (geteuid() != 0) {
    why = "not root";
    return "";
  }
  for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    const std::string dir = std::string(mount) + "/mploader-cpu-test-" + std::to_string(getpid());
    if (mkdir(dir.c_str(), 0755) != 0) continue;
    if (write_ok(dir + "/cpu.cfs_period_us", "100000") &&
        write_ok(dir + "/cpu.cfs_quota_us", "100000")) {
      return dir;
    }
    rmdir(dir.c_str());
  }
  why = "no cgroup v1 cpu controller to make a cgroup in (/sys/fs/cgroup/cpu)";
  return "";
}

// one_cpu_cgroup_v1(), or "" after saying in the test's output why it is skipped.
std::string one_cpu_cgroup_or_skip() {
  std::string why;
  const std::string dir = one_cpu_cgroup_v1(why);
  if (dir.empty()) WARN("skipped: cannot make a cgroup with a CPU quota: " << why);
  return dir;
}

// Runs `measure` in a child process inside the one-CPU cgroup `dir`; returns what it wrote, or
// fails the test when it could not enter the cgroup or did not exit 0.
template <typename Measure>
std::string measured_in_cgroup(const std::string& dir, Measure&& measure) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(out[0]);
    if (!write_ok(dir + "/cgroup.procs", std::to_string(getpid()))) _exit(3);
    std::string said;
    try {
      said = measure();
    } catch (const std::exception& e) {
      said = std::string("threw: ") + e.what();
    }
    if (write(out[1], said.data(), said.size()) < 0) _exit(4);
    _exit(0);
  }
  close(out[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) said.append(buffer, n);
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  rmdir(dir.c_str());
  INFO(said);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return said;
}

// 2 ms of CPU time per sample: compute-bound workers.
class Spinning : public mploader::Dataset {
 public:
  size_t size() const override { return 64; }
  mploader::Sample get(int64_t index) override {
    const auto now = [] {
      timespec t{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      return t.tv_sec * 1000000000ll + t.tv_nsec;
    };
    const long long until = now() + 2000000;
    while (now() < until) {
    }
    return {{"x", at::full({4}, static_cast<double>(index), at::kFloat)}};
  }
};

}  // namespace

TEST_CASE("cpu budget: cpu.max and cfs quota texts", "[cpu_budget]") {
  CHECK(cpu_max_quota("max 100000\n") == 0);
  CHECK(cpu_max_quota("150000 100000\n") == Approx(1.5));
  CHECK(cpu_max_quota("50000 100000") == Approx(0.5));
  CHECK(cpu_max_quota("") == -1);
  CHECK(cpu_max_quota("150000") == -1);
  CHECK(cpu_max_quota("abc 100000") == -1);
  CHECK(cpu_max_quota("100000 0") == -1);
  CHECK(cfs_quota("-1\n", "100000\n") == 0);
  CHECK(cfs_quota("250000\n", "100000\n") == Approx(2.5));
  CHECK(cfs_quota("x", "100000") == -1);
  CHECK(cfs_quota("100000", "0") == -1);
}

TEST_CASE("cpu budget: the quota rounds down, to 1 at least, and never raises the mask",
          "[cpu_budget]") {
  CpuBudget b;
  b.affinity = 8;
  CHECK(b.cpus() == 8);
  CHECK(b.source() == "its affinity mask");
  b.quota_cpus = 2.5;
  b.quota_file = "/q";
  CHECK(b.cpus() == 2);
  CHECK(b.source() == "the cgroup CPU quota of 2.50 CPUs (/q)");
  b.quota_cpus = 0.3;
  CHECK(b.cpus() == 1);
  b.quota_cpus = 16;
  CHECK(b.cpus() == 8);
  CHECK(b.source() == "its affinity mask");
}

TEST_CASE("cpu budget: the tightest quota of the cgroup and its ancestors, v1 and v2",
          "[cpu_budget]") {
  TempDir t;
  const std::string proc = t.path + "/proc", root = t.path + "/cgroup";
  make_dirs(proc);
  // v2: the job's cgroup allows 3 CPUs, its parent 1.5, the root has no cpu.max.
  make_dirs(root + "/v2/kube/job");
  write_file(root + "/v2/kube/cpu.max", "150000 100000\n");
  write_file(root + "/v2/kube/job/cpu.max", "300000 100000\n");
  write_file(proc + "/cgroup", "0::/kube/job\n");
  CpuBudget v2 = cpu_budget(proc, root + "/v2");
  CHECK(v2.quota_cpus == Approx(1.5));
  CHECK(v2.quota_file == root + "/v2/kube/cpu.max");
  // v1, with the controllers mounted together: only the cpu line counts.
  make_dirs(root + "/v1/cpu,cpuacct/docker/abc");
  write_file(root + "/v1/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
  write_file(root + "/v1/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  write_file(root + "/v1/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  write_file(root + "/v1/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  write_file(proc + "/cgroup", "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n");
  CpuBudget v1 = cpu_budget(proc, root + "/v1");
  CHECK(v1.quota_cpus == Approx(2.0));
  // No quota anywhere: the affinity mask alone.
  write_file(proc + "/cgroup", "0::/\n");
  CpuBudget none = cpu_budget(proc, root + "/v2");
  CHECK(none.quota_cpus == 0);
  CHECK(none.cpus() == none.affinity);
}

TEST_CASE("cpu budget: a real cgroup with a quota of 1 CPU gives 1, and the preflight says so",
          "[cpu_budget][process]") {
  const std::string dir = one_cpu_cgroup_or_skip();
  if (dir.empty()) return;
  const std::string said = measured_in_cgroup(dir, [] {  // measure as the loader would
    mploader::detail::PreflightInput in;
    in.worker_slots = 2;
    mploader::detail::measure_machine(in);
    std::string text = std::to_string(in.cpus) + "\n";
    for (const auto& f : mploader::detail::preflight(in)) {
      if (f.what == "cpus") text += f.message;
    }
    return text;
  });
  INFO(said);
  CHECK(said.rfind("1\n", 0) == 0);
  CHECK_THAT(said, Catch::Contains("num_workers = 2 but this process may use 1 CPU (") &&
                       Catch::Contains("the cgroup CPU quota of 1.00 CPUs") &&
                       Catch::Contains("cpu.cfs_quota_us") && Catch::Contains("Use at most 1."));
}

TEST_CASE("cpu budget: tune() inside a real 1-CPU cgroup recommends 1 compute-bound worker",
          "[cpu_budget][process]") {
  const std::string dir = one_cpu_cgroup_or_skip();
  if (dir.empty()) return;
  const std::string said = measured_in_cgroup(dir, [] {
    mploader::LoaderOptions base;
    base.batch_size = 4;
    base.persistent_workers = true;
    mploader::TuneOptions t;
    t.workers = {1, 2, 3};
    t.batches_per_point = 12;
    const mploader::TuneResult r =
        mploader::tune([] { return std::make_shared<Spinning>(); }, base, t);
    return std::to_string(r.cpu_budget.cpus) + " " +
           std::to_string(r.recommendation.workers) + "\n" + r.summary();
  });
  // The budget is the quota, and workers beyond it, off the CPU for much of their busy time
  // because the quota throttles them, are still held to it.
  INFO(said);
  CHECK(said.rfind("1 1\n", 0) == 0);
}

TEST_CASE("cpu budget: inside a real 1-CPU cgroup the autotuner runs one compute-bound worker",
          "[cpu_budget][autotune][process]") {
  const std::string dir = one_cpu_cgroup_or_skip();
  if (dir.empty()) return;
  const std::string said = measured_in_cgroup(dir, [] {
    mploader::LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = mploader::kAuto;
    mploader::Loader loader(std::make_shared<Spinning>(), o);
    int64_t most = loader.stats().workers_running;
    for (int epoch = 0; epoch < 6; ++epoch) {  // 16 batches of 8 ms of CPU each, per epoch
      for (mploader::Batch& b : loader) {
        (void)b;
        most = std::max(most, loader.stats().workers_running);
      }
    }
    return std::to_string(most) + " " + std::to_string(loader.stats().autotune.size());
  });
  INFO(said);
  CHECK(said.rfind("1 ", 0) == 0);
}

}  // namespace test_cpu_budget
