#include "supervise/memory_evidence.h"

#include <fstream>
#include <sstream>
#include <vector>

namespace mploader::detail {
namespace {

// The value after `key` in a "key value" file, or -1.
int64_t keyed_value(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  std::string v;
  while (in >> k >> v) {
    if (k == key) return v == "max" ? -1 : std::stoll(v);
  }
  return -1;
}

int64_t single_value(const std::string& file) {
  std::ifstream in(file);
  std::string v;
  if (!(in >> v) || v == "max") return -1;
  int64_t n = std::stoll(v);
  return n >= (int64_t{1} << 62) ? -1 : n;  // v1 writes a huge number for "no limit"
}

struct CgroupMount {
  std::string root;
  std::string mount_point;
};

// From /proc/self/mountinfo: the cgroup2 mount, or the v1 mount carrying `controller`.
std::optional<CgroupMount> find_mount(bool v2, const std::string& controller) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::vector<std::string> f;
    for (std::string w; s >> w;) f.push_back(w);
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 5 || dash + 2 >= f.size()) continue;  // type, source, options follow "-"
    const std::string& type = f[dash + 1];
    if (v2 && type == "cgroup2") return CgroupMount{f[3], f[4]};
    if (!v2 && type == "cgroup" && ("," + f.back() + ",").find("," + controller + ",") !=
                                       std::string::npos) {
      return CgroupMount{f[3], f[4]};
    }
  }
  return std::nullopt;
}

std::string join_path(const CgroupMount& m, const std::string& cgroup) {
  std::string rel = cgroup;
  if (m.root != "/" && rel.compare(0, m.root.size(), m.root) == 0) rel = rel.substr(m.root.size());
  return m.mount_point + (rel == "/" ? "" : rel);
}

OomCounter from_v2(const std::string& dir) {
  return OomCounter{"cgroup v2", dir, keyed_value(dir + "/memory.events", "oom_kill"),
                    single_value(dir + "/memory.max")};
}

OomCounter from_v1(const std::string& dir) {
  return OomCounter{"cgroup v1", dir, keyed_value(dir + "/memory.oom_control", "oom_kill"),
                    single_value(dir + "/memory.limit_in_bytes")};
}

OomCounter from_vmstat() {
  return OomCounter{"/proc/vmstat", "", keyed_value("/proc/vmstat", "oom_kill"), -1};
}

}  // namespace

std::optional<ProcessMemory> read_process_memory(pid_t pid) {
  const std::string file = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(file);
  if (!in) return std::nullopt;
  ProcessMemory m;
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") in >> m.rss_bytes, m.rss_bytes *= 1024;
    if (key == "VmHWM:") in >> m.hwm_bytes, m.hwm_bytes *= 1024;
    in.ignore(1 << 16, '\n');
  }
  if (m.rss_bytes < 0) return std::nullopt;
  return m;
}

std::optional<MemorySplit> read_memory_split(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  if (!in) return std::nullopt;
  in.ignore(1 << 16, '\n');  // the [rollup] line: an address range
  int64_t private_kb = -1;
  int64_t shared_kb = 0;
  bool shared_seen = false;
  std::string key;
  int64_t kb = 0;
  while (in >> key >> kb) {
    if (key == "Private_Dirty:") private_kb = kb;
    if (key == "Shared_Clean:" || key == "Shared_Dirty:") shared_kb += kb, shared_seen = true;
    in.ignore(1 << 16, '\n');  // the unit
  }
  if (private_kb < 0 || !shared_seen) return std::nullopt;  // a zombie's file is empty
  return MemorySplit{private_kb * 1024, shared_kb * 1024};
}

OomCounter read_oom_counter(pid_t pid) {
  std::string v1_path;
  std::string v2_path;
  {
    // Closed before the next file opens: the supervisor holds one such descriptor at a time
    // (preflight counts one; see kFdsPerLoader).
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find(':');
      const size_t b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string controllers = line.substr(a + 1, b - a - 1);
      if (line.compare(0, a, "0") == 0 && controllers.empty()) v2_path = line.substr(b + 1);
      if (("," + controllers + ",").find(",memory,") != std::string::npos) {
        v1_path = line.substr(b + 1);
      }
    }
  }
  if (!v2_path.empty()) {
    if (auto m = find_mount(true, "")) {
      OomCounter c = from_v2(join_path(*m, v2_path));
      if (c.oom_kills >= 0) return c;
    }
  }
  if (!v1_path.empty()) {
    if (auto m = find_mount(false, "memory")) {
      OomCounter c = from_v1(join_path(*m, v1_path));
      if (c.oom_kills >= 0) return c;
    }
  }
  return from_vmstat();
}

OomCounter reread_oom_counter(const OomCounter& before) {
  if (before.source == "cgroup v2") return from_v2(before.path);
  if (before.source == "cgroup v1") return from_v1(before.path);
  return from_vmstat();
}

int64_t cgroup_usage_bytes(const OomCounter& counter) {
  if (counter.source == "cgroup v2") return single_value(counter.path + "/memory.current");
  if (counter.source == "cgroup v1") return single_value(counter.path + "/memory.usage_in_bytes");
  return -1;
}

}  // namespace mploader::detail
