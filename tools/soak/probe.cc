#include "tools/soak/probe.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <thread>
#include <sstream>
#include <tuple>
#include <utility>

namespace bench::soak {
namespace {

// Calls `visit` with the name of each entry of `dir` but "." and ".."; returns how many.
int64_t for_each_entry(const std::string& dir,
                       const std::function<void(const std::string&)>& visit = {}) {
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  int64_t n = 0;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    ++n;
    if (visit) visit(name);
  }
  closedir(d);
  return n;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Processes whose parent is this one. /proc/<pid>/stat is "pid (comm) state ppid ...", and
// comm may hold spaces and parentheses, hence the search from the last ')'.
int64_t count_children() {
  const std::string self = std::to_string(getpid());
  int64_t children = 0;
  for_each_entry("/proc", [&](const std::string& name) {
    if (!all_digits(name)) return;
    std::ifstream in("/proc/" + name + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) return;  // it ended meanwhile
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return;
    std::istringstream fields(stat.substr(close + 1));
    std::string state, ppid;
    fields >> state >> ppid;
    if (ppid == self) ++children;
  });
  return children;
}

// mploader names a shared file only on a filesystem without O_TMPFILE, as mploader-XXXXXX,
// and unlinks it at once: one that stays is a leak. Other programs' entries (the machine may
// be shared) are not ours to count.
int64_t count_named_shm(const std::string& dir) {
  int64_t named = 0;
  for_each_entry(dir, [&](const std::string& name) {
    if (name.rfind("mploader-", 0) == 0) ++named;
  });
  return named;
}

bool is_shared_memory_file(const std::string& path, const std::string& shm_dir) {
  if (path.rfind("/memfd:", 0) == 0 || path.rfind("/dev/shm/", 0) == 0) return true;
  if (path.rfind("/SYSV", 0) == 0) return true;
  return !shm_dir.empty() && path.rfind(shm_dir + "/", 0) == 0;
}

// Distinct shared-memory files mapped into this process (a file mapped twice counts once):
// the rings, overflow segments and anything else backed by memfd or a tmpfs.
int64_t count_mapped_shm(const std::string& shm_dir) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::pair<std::string, std::string>> files;  // (device, inode)
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode;
    std::getline(fields >> std::ws, path);
    if (inode != "0" && is_shared_memory_file(path, shm_dir)) files.emplace(device, inode);
  }
  return static_cast<int64_t>(files.size());
}

// Reads the "Name:  123 kB" fields of /proc/self/status that the soak needs.
void read_memory(ProcessCounts& counts) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::pair<const char*, int64_t*> wanted[] = {{"VmRSS:", &counts.rss_kib},
                                                     {"RssAnon:", &counts.rss_anon_kib},
                                                     {"RssShmem:", &counts.rss_shmem_kib}};
  while (std::getline(status, line)) {
    for (const auto& [key, field] : wanted) {
      if (line.rfind(key, 0) == 0) *field = std::atoll(line.c_str() + std::string(key).size());
    }
  }
}

}  // namespace

ProcessCounts measure_process(const std::string& shm_dir) {
  ProcessCounts counts;
  counts.fds = for_each_entry("/proc/self/fd") - 1;  // the descriptor that lists them
  counts.threads = for_each_entry("/proc/self/task");
  counts.children = count_children();
  counts.shm_named = count_named_shm("/dev/shm");
  if (!shm_dir.empty() && shm_dir != "/dev/shm") counts.shm_named += count_named_shm(shm_dir);
  counts.shm_mapped = count_mapped_shm(shm_dir);
  read_memory(counts);
  return counts;
}

ProcessCounts measure_process_steady(const std::string& shm_dir) {
  ProcessCounts low = measure_process(shm_dir);
  for (int reading = 1; reading < 3; ++reading) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const ProcessCounts c = measure_process(shm_dir);
    for (int64_t ProcessCounts::*field :
         {&ProcessCounts::fds, &ProcessCounts::threads, &ProcessCounts::children,
          &ProcessCounts::shm_named, &ProcessCounts::shm_mapped, &ProcessCounts::rss_kib,
          &ProcessCounts::rss_anon_kib, &ProcessCounts::rss_shmem_kib}) {
      low.*field = std::min(low.*field, c.*field);
    }
  }
  return low;
}

std::string count_difference(const ProcessCounts& now, const ProcessCounts& reference,
                             const std::string& reference_label) {
  const std::tuple<const char*, int64_t, int64_t> counts[] = {
      {"open fds", now.fds, reference.fds},
      {"threads", now.threads, reference.threads},
      {"child processes", now.children, reference.children},
      {"named mploader files in /dev/shm", now.shm_named, reference.shm_named},
      {"mapped shared-memory files", now.shm_mapped, reference.shm_mapped}};
  for (const auto& [what, value, was] : counts) {
    if (value != was) {
      return std::string(what) + " " + std::to_string(value) + " (" + reference_label + " had " +
             std::to_string(was) + ")";
    }
  }
  return "";
}

double rss_change_percent(const ProcessCounts& now, const ProcessCounts& reference) {
  if (reference.rss_kib <= 0) return 0;
  return 100.0 * static_cast<double>(now.rss_kib - reference.rss_kib) /
         static_cast<double>(reference.rss_kib);
}

}  // namespace bench::soak
