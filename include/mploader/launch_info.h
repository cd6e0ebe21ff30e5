/// @file
/// Where this process sits in a distributed job (rank, world size, local rank), read from the
/// variables its launcher sets: torchrun, SLURM or Open MPI. Reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mploader {

/// Where this process sits in a distributed job, as its launcher said.
struct LaunchInfo {
  int64_t rank = 0;        ///< This process's rank, in [0, world_size).
  int64_t world_size = 1;  ///< Processes in the job.
  int64_t local_rank = -1;  ///< -1 when the launcher did not say
  /// "torchrun" (RANK, WORLD_SIZE, LOCAL_RANK), "slurm" (SLURM_PROCID, SLURM_NTASKS,
  /// SLURM_LOCALID), "openmpi" (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), or "none": a single
  /// process, rank 0 of 1.
  std::string launcher = "none";
};

/// Reads the variables above; torchrun's win (it may run under SLURM or mpirun), and SLURM's and
/// Open MPI's must agree when both are set. Throws OptionError naming the variable when one is
/// not a whole number, the rank is outside [0, world size), a rank comes without its size (or
/// the reverse), or values contradict each other.
LaunchInfo launch_info_from_env();
/// The same with variables from `get` (nullopt: not set); for tests and embedders.
LaunchInfo launch_info_from_env(
    const std::function<std::optional<std::string>(const std::string&)>& get);

}  // namespace mploader
