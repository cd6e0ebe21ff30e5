#include "tools/soak/kills.h"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace bench::soak {
namespace {

// A zombie (killed, not yet reaped by the loader) or a vanished process is no longer a worker
// to kill.
bool alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' &&
         stat[close + 2] != 'X';
}

}  // namespace

std::vector<int64_t> plan_kills(std::mt19937_64& random, double probability, int64_t budget,
                                size_t batches) {
  std::vector<int64_t> at;
  const bool kills = std::uniform_real_distribution<double>(0, 1)(random) < probability;
  if (!kills || budget < 1 || batches == 0) return at;
  const int64_t wanted = std::uniform_int_distribution<int64_t>(1, budget)(random);
  std::uniform_int_distribution<int64_t> batch(0, static_cast<int64_t>(batches) - 1);
  for (int64_t k = 0; k < wanted; ++k) at.push_back(batch(random));
  std::sort(at.begin(), at.end());
  return at;
}

int kill_random_worker(const mploader::Loader& loader, std::mt19937_64& random,
                       std::set<int>& killed) {
  std::vector<int> candidates;
  for (int pid : loader.worker_pids()) {
    if (killed.count(pid) == 0 && alive(pid)) candidates.push_back(pid);
  }
  if (candidates.empty()) return -1;
  std::uniform_int_distribution<size_t> pick(0, candidates.size() - 1);
  const int pid = candidates[pick(random)];
  if (kill(pid, SIGKILL) != 0) return -1;
  killed.insert(pid);
  return pid;
}

}  // namespace bench::soak
