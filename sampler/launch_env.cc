// Rank and world size from the environment a launcher sets: torchrun (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE), SLURM's srun (SLURM_PROCID, SLURM_NTASKS or the older
// SLURM_NPROCS, SLURM_LOCALID) and Open MPI's mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK,
// _LOCAL_SIZE). Values are parsed strictly: a typo is an error here rather than a hang later.
// Thread-safety: reentrant (std::getenv is safe while nobody calls setenv).
#include <mploader/errors.h>
#include <mploader/launch_info.h>

#include <cstdlib>
#include <string>

namespace mploader {
namespace {

using Getter = std::function<std::optional<std::string>(const std::string&)>;

// The variables of one launcher; local_size may be null.
struct Vars {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr Vars kTorchrun{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
constexpr Vars kSlurm{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr};
constexpr Vars kOpenMpi{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};

[[noreturn]] void fail(const std::string& variable, const std::string& message) {
  throw OptionError(variable, "mploader: " + message);
}

std::optional<int64_t> read_int(const Getter& get, const std::string& name, int64_t min) {
  const std::optional<std::string> text = get(name);
  if (!text) return std::nullopt;
  const bool digits = !text->empty() && text->size() <= 10 &&
                      text->find_first_not_of("0123456789") == std::string::npos;
  const int64_t value = digits ? std::stoll(*text) : -1;
  if (!digits || value < min || value > (int64_t{1} << 31)) {
    fail(name, "environment variable " + name + "='" + *text + "' is not a whole number >= " +
                   std::to_string(min) + "; it should be set by the launcher (torchrun, srun, "
                   "mpirun): unset it, or fix the script that sets it");
  }
  return value;
}

// The SLURM task count: SLURM_NTASKS, else SLURM_NPROCS; both must agree when both are set.
std::optional<int64_t> slurm_size(const Getter& get) {
  const std::optional<int64_t> ntasks = read_int(get, "SLURM_NTASKS", 1);
  const std::optional<int64_t> nprocs = read_int(get, "SLURM_NPROCS", 1);
  if (ntasks && nprocs && *ntasks != *nprocs) {
    fail("SLURM_NTASKS", "SLURM_NTASKS=" + std::to_string(*ntasks) + " and SLURM_NPROCS=" +
                             std::to_string(*nprocs) + " disagree on the number of tasks; "
                             "run under one srun, or unset the stale one");
  }
  return ntasks ? ntasks : nprocs;
}

void check_local(const Getter& get, const Vars& v, const LaunchInfo& info) {
  const std::optional<int64_t> local_size =
      v.local_size ? read_int(get, v.local_size, 1) : std::nullopt;
  const std::string where = std::string(" (") + v.rank + "=" + std::to_string(info.rank) + ", " +
                            v.size + "=" + std::to_string(info.world_size) + ")";
  if (local_size && *local_size > info.world_size) {
    fail(v.local_size, std::string(v.local_size) + "=" + std::to_string(*local_size) +
                           " is more than the world size" + where + "; fix the launch script");
  }
  if (info.local_rank < 0) return;
  if (local_size && info.local_rank >= *local_size) {
    fail(v.local_rank, std::string(v.local_rank) + "=" + std::to_string(info.local_rank) +
                           " is not below " + v.local_size + "=" + std::to_string(*local_size) +
                           "; fix the launch script");
  }
  if (info.local_rank > info.rank) {
    fail(v.local_rank, std::string(v.local_rank) + "=" + std::to_string(info.local_rank) +
                           " is more than the global rank" + where +
                           ", which no launcher does; fix the launch script");
  }
}

std::optional<LaunchInfo> read_launcher(const Getter& get, const Vars& v) {
  const std::optional<int64_t> rank = read_int(get, v.rank, 0);
  const std::optional<int64_t> size =
      std::string(v.launcher) == "slurm" ? slurm_size(get) : read_int(get, v.size, 1);
  if (!rank && !size) return std::nullopt;
  if (!rank || !size) {
    const char* given = rank ? v.rank : v.size;
    const char* missing = rank ? v.size : v.rank;
    // SLURM sets the task count in a whole allocation (sbatch, salloc) but the rank only in
    // tasks that srun started: a task count alone is a shell of the allocation, not a rank.
    if (std::string(v.launcher) == "slurm" && !rank) return std::nullopt;
    fail(missing, std::string(given) + " is set but " + missing + " is not; " + v.launcher +
                      " sets both. Launch with " + v.launcher +
                      ", or set both (or neither) yourself");
  }
  if (*rank >= *size) {
    fail(v.rank, std::string(v.rank) + "=" + std::to_string(*rank) + " is not below " + v.size +
                     "=" + std::to_string(*size) + "; ranks run from 0 to the world size - 1");
  }
  LaunchInfo info;
  info.rank = *rank;
  info.world_size = *size;
  info.local_rank = read_int(get, v.local_rank, 0).value_or(-1);
  info.launcher = v.launcher;
  check_local(get, v, info);
  return info;
}

std::string describe(const LaunchInfo& info) {
  return "rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size);
}

}  // namespace

LaunchInfo launch_info_from_env(const Getter& get) {
  // torchrun first: it may itself run under srun or mpirun, and its ranks are the ones that
  // count for the processes it starts.
  if (std::optional<LaunchInfo> torchrun = read_launcher(get, kTorchrun)) return *torchrun;
  const std::optional<LaunchInfo> slurm = read_launcher(get, kSlurm);
  const std::optional<LaunchInfo> mpi = read_launcher(get, kOpenMpi);
  if (slurm && mpi &&
      (slurm->rank != mpi->rank || slurm->world_size != mpi->world_size)) {
    fail("SLURM_PROCID", "SLURM says this task is " + describe(*slurm) + " but Open MPI says " +
                             describe(*mpi) + "; launch with srun or with mpirun, not one "
                             "inside the other, or unset the outer launcher's variables");
  }
  if (slurm) return *slurm;
  if (mpi) return *mpi;
  return LaunchInfo{};
}

LaunchInfo launch_info_from_env() {
  return launch_info_from_env([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace mploader
