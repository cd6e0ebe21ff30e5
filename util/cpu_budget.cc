// The CPU budget (util/cpu_budget.h): the affinity mask, and the cgroup quota found by walking
// from this process's cgroup (/proc/self/cgroup) up to the root of its hierarchy.
#include "util/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace mploader::detail {
namespace {

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream all;
  all << in.rdbuf();
  text = all.str();
  return true;
}

// A whole number with nothing but white space around it.
bool parse_number(const std::string& text, long long& value) {
  std::istringstream in(text);
  std::string rest;
  return static_cast<bool>(in >> value) && !(in >> rest);
}

// "/a/b" -> "/a/b", "/a", "/": the cgroup and its ancestors, innermost first.
std::vector<std::string> self_and_ancestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    out.push_back(path);
    path = path.substr(0, path.find_last_of('/'));
  }
  out.push_back("");
  return out;
}

// The lowest quota among the cgroup's `file_name` (or pair of files) and its ancestors'.
struct QuotaFound {
  double cpus = 0;
  std::string file;
};

void keep_lower(QuotaFound& found, double cpus, const std::string& file) {
  if (cpus > 0 && (found.cpus == 0 || cpus < found.cpus)) found = {cpus, file};
}

void v2_quota(const std::string& root, const std::string& path, QuotaFound& found) {
  for (const std::string& dir : self_and_ancestors(path)) {
    const std::string file = root + dir + "/cpu.max";
    std::string text;
    if (read_file(file, text)) keep_lower(found, cpu_max_quota(text), file);
  }
}

// v1 mounts the cpu controller at <root>/cpu,cpuacct (the name of its line) or <root>/cpu.
void v1_quota(const std::string& root, const std::string& controllers, const std::string& path,
              QuotaFound& found) {
  for (const std::string& mount : {root + "/" + controllers, root + "/cpu"}) {
    for (const std::string& dir : self_and_ancestors(path)) {
      std::string quota, period;
      if (read_file(mount + dir + "/cpu.cfs_quota_us", quota) &&
          read_file(mount + dir + "/cpu.cfs_period_us", period)) {
        keep_lower(found, cfs_quota(quota, period), mount + dir + "/cpu.cfs_quota_us");
      }
    }
    if (found.cpus > 0) return;
  }
}

bool names_cpu_controller(const std::string& controllers) {
  std::istringstream in(controllers);
  std::string one;
  while (std::getline(in, one, ',')) {
    if (one == "cpu") return true;
  }
  return false;
}

QuotaFound cgroup_quota(const std::string& proc_self, const std::string& cgroup_root) {
  QuotaFound found;
  std::ifstream lines(proc_self + "/cgroup");
  std::string line;
  while (std::getline(lines, line)) {  // "id:controllers:path"
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      v2_quota(cgroup_root, path, found);
    } else if (names_cpu_controller(controllers)) {
      v1_quota(cgroup_root, controllers, path, found);
    }
  }
  return found;
}

}  // namespace

double cpu_max_quota(const std::string& text) {
  std::istringstream in(text);
  std::string quota, rest;
  long long period = 0;
  if (!(in >> quota >> period) || (in >> rest) || period <= 0) return -1;
  if (quota == "max") return 0;
  long long value = 0;
  if (!parse_number(quota, value) || value <= 0) return -1;
  return static_cast<double>(value) / static_cast<double>(period);
}

double cfs_quota(const std::string& quota_text, const std::string& period_text) {
  long long quota = 0, period = 0;
  if (!parse_number(quota_text, quota) || !parse_number(period_text, period) || period <= 0) {
    return -1;
  }
  return quota < 0 ? 0 : static_cast<double>(quota) / static_cast<double>(period);
}

int64_t CpuBudget::cpus() const {
  if (quota_cpus <= 0) return affinity;
  const auto by_quota = std::max<int64_t>(1, static_cast<int64_t>(std::floor(quota_cpus)));
  return affinity > 0 ? std::min(affinity, by_quota) : by_quota;
}

std::string CpuBudget::source() const {
  if (quota_cpus <= 0 || cpus() == affinity) return "its affinity mask";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", quota_cpus);
  return std::string("the cgroup CPU quota of ") + text + " CPUs (" + quota_file + ")";
}

CpuBudget cpu_budget(const std::string& proc_self, const std::string& cgroup_root) {
  CpuBudget budget;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) budget.affinity = CPU_COUNT(&set);
  const QuotaFound quota = cgroup_quota(proc_self, cgroup_root);
  budget.quota_cpus = quota.cpus;
  budget.quota_file = quota.file;
  return budget;
}

}  // namespace mploader::detail
