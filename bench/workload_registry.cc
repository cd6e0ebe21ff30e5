// The registry of workloads with a command line of their own (workload_registry.h).
#include "bench/workload_registry.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {
namespace {

// Made on first use: the registrations run during static initialisation, in no set order.
std::vector<OwnWorkload>& own_workloads() {
  static std::vector<OwnWorkload> all;
  return all;
}

bool name_before(const OwnWorkload& a, const OwnWorkload& b) {
  return std::strcmp(a.name, b.name) < 0;
}

}  // namespace

bool register_workload(const OwnWorkload& workload) {
  std::vector<OwnWorkload>& all = own_workloads();
  // Kept by name, so that which one a command line naming two gets never hangs on link order.
  const auto at = std::lower_bound(all.begin(), all.end(), workload, name_before);
  if (at != all.end() && std::strcmp(at->name, workload.name) == 0) {
    throw std::logic_error(std::string("mploader-bench: two workloads register as --workload ") +
                           workload.name);
  }
  all.insert(at, workload);
  return true;
}

const OwnWorkload* asked_workload(int argc, char** argv) {
  for (const OwnWorkload& workload : own_workloads()) {
    if (workload.asked(argc, argv)) return &workload;
  }
  return nullptr;
}

std::vector<std::string> own_workload_names() {
  std::vector<std::string> names;
  for (const OwnWorkload& workload : own_workloads()) names.emplace_back(workload.name);
  return names;
}

}  // namespace bench
