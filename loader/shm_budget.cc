#include "loader/shm_budget.h"

#include "ipc/region_layout.h"
#include "ipc/shm_region.h"
#include "supervise/memory_evidence.h"
#include "util/meminfo.h"
#include "util/units.h"

#include <mploader/errors.h>

#include <unistd.h>

#include <fstream>

namespace mploader::detail {
namespace {

void tighten(std::optional<ShmBudget>& budget, uint64_t bytes, std::string source) {
  if (!budget || bytes < budget->bytes) budget = ShmBudget{bytes, std::move(source)};
}

uint64_t region_bytes_of(const PoolConfig& c) {
  return ipc::RegionGeometry::compute(c.num_descriptors, c.num_slots, c.max_indices,
                                      c.slot_bytes)
      .total_bytes;
}

}  // namespace

std::optional<ShmBudget> shm_budget(const LoaderOptions& options) {
  std::optional<ShmBudget> budget;
  if (options.max_shm_bytes > 0) tighten(budget, options.max_shm_bytes, "max_shm_bytes");
  // A fixed count has the pool's own check of the file system, and the preflight's warning
  // about the memory limit: only an explicit limit is enforced here.
  if (options.num_workers != kAuto) return budget;
  if (!options.shm_dir.empty()) {
    const int64_t free_bytes = ipc::free_bytes_of_dir(options.shm_dir);
    if (free_bytes >= 0) {
      tighten(budget, static_cast<uint64_t>(free_bytes),
              "the free space of '" + options.shm_dir + "'");
    }
  }
  // memfd rings take memory as they are written, as the rings in shm_dir do.
  const int64_t available = mem_available_bytes();
  if (available >= 0) {
    tighten(budget, static_cast<uint64_t>(available / 2),
            "half of the memory available (MemAvailable " + human_bytes(available) + ")");
  }
  const OomCounter cgroup = read_oom_counter(getpid());
  if (cgroup.limit_bytes > 0) {
    const int64_t used = std::max<int64_t>(0, cgroup_usage_bytes(cgroup));
    const int64_t room = std::max<int64_t>(0, cgroup.limit_bytes - used);
    tighten(budget, static_cast<uint64_t>(room / 2),
            "half of what the memory cgroup has left (" + human_bytes(room) + " of " +
                human_bytes(cgroup.limit_bytes) + ", " + cgroup.path + ")");
  }
  return budget;
}

std::string fit_workers_to_shm(PoolConfig& config, const LoaderOptions& options,
                               const std::optional<ShmBudget>& budget) {
  if (!budget) return "";
  const uint64_t region = region_bytes_of(config);
  const uint64_t fit = region > 0 ? budget->bytes / region : 0;
  const uint64_t want = static_cast<uint64_t>(config.worker_slots);
  if (fit >= want) return "";
  const std::string need = std::to_string(want) + " rings of " + human_bytes(region) + " (" +
                           std::to_string(config.num_slots) + " slots of " +
                           human_bytes(config.slot_bytes) + " each)";
  if (options.num_workers != kAuto || fit == 0) {
    const std::string fix =
        "Lower batch_size, prefetch_factor or max_batch_bytes" +
        std::string(options.num_workers == kAuto ? "" : ", or num_workers") +
        (budget->source == "max_shm_bytes" ? ", or raise max_shm_bytes."
                                           : ", or give the rings more room (a larger "
                                             "shm_dir, a higher memory limit).");
    const std::string msg = "mploader: the workers need " + need + ", " +
                            human_bytes(region * std::max<uint64_t>(want, 1)) + " in all, " +
                            "more than the " + human_bytes(budget->bytes) + " of " +
                            budget->source + ". " + fix;
    if (budget->source == "max_shm_bytes") throw OptionError("max_shm_bytes", msg);
    throw ShmError(msg, region * want, budget->bytes);
  }
  config.worker_slots = static_cast<int>(fit);
  config.workers_running = std::min(config.workers_running, config.worker_slots);
  return "their rings of " + human_bytes(region) + " each fit " + std::to_string(fit) +
         " times in the " + human_bytes(budget->bytes) + " of " + budget->source;
}

}  // namespace mploader::detail
