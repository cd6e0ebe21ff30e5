// launch_info_from_env: torchrun, SLURM and Open MPI variables, their precedence, and a clear
// OptionError naming the variable when they are malformed or contradict each other.
#include <mploader/errors.h>
#include <mploader/launch_info.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>

namespace test_distributed_env {

using mploader::LaunchInfo;

namespace {

using Env = std::map<std::string, std::string>;

LaunchInfo read(const Env& env) {
  return mploader::launch_info_from_env([&](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

std::string error_of(const Env& env) {
  try {
    read(env);
  } catch (const mploader::OptionError& e) {
    return e.option() + ": " + e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("launch env: each launcher's variables, and none", "[distributed][env]") {
  LaunchInfo none = read({});
  CHECK(none.launcher == "none");
  CHECK(none.rank == 0);
  CHECK(none.world_size == 1);
  CHECK(none.local_rank == -1);

  LaunchInfo t = read({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                       {"LOCAL_WORLD_SIZE", "4"}});
  CHECK(t.launcher == "torchrun");
  CHECK(t.rank == 5);
  CHECK(t.world_size == 8);
  CHECK(t.local_rank == 1);

  LaunchInfo s = read({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}});
  CHECK(s.launcher == "slurm");
  CHECK(s.rank == 3);
  CHECK(s.world_size == 4);
  CHECK(s.local_rank == 0);
  CHECK(read({{"SLURM_PROCID", "2"}, {"SLURM_NPROCS", "3"}}).world_size == 3);
  // An allocation shell (sbatch, salloc) has a task count but no rank: not an srun task.
  CHECK(read({{"SLURM_NTASKS", "16"}}).launcher == "none");

  LaunchInfo m = read({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  CHECK(m.launcher == "openmpi");
  CHECK(m.world_size == 2);

  // torchrun under srun: torchrun's ranks count. srun with Open MPI's PMIx: both agree.
  LaunchInfo nested = read({{"RANK", "6"}, {"WORLD_SIZE", "16"}, {"SLURM_PROCID", "1"},
                            {"SLURM_NTASKS", "2"}});
  CHECK(nested.launcher == "torchrun");
  CHECK(nested.rank == 6);
  CHECK(read({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"OMPI_COMM_WORLD_RANK", "1"},
              {"OMPI_COMM_WORLD_SIZE", "2"}})
            .rank == 1);
}

TEST_CASE("launch env: malformed or inconsistent variables name the variable",
          "[distributed][env]") {
  CHECK_THAT(error_of({{"RANK", "two"}, {"WORLD_SIZE", "4"}}),
             Catch::StartsWith("RANK:") && Catch::Contains("RANK='two' is not a whole number"));
  CHECK_THAT(error_of({{"RANK", "1"}, {"WORLD_SIZE", " 4"}}),
             Catch::StartsWith("WORLD_SIZE:") && Catch::Contains("' 4'"));
  CHECK_THAT(error_of({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}), Catch::StartsWith("RANK:"));
  CHECK_THAT(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
             Catch::StartsWith("WORLD_SIZE:") && Catch::Contains(">= 1"));
  CHECK_THAT(error_of({{"RANK", "99999999999"}, {"WORLD_SIZE", "4"}}), Catch::StartsWith("RANK:"));
  CHECK_THAT(error_of({{"RANK", ""}, {"WORLD_SIZE", "4"}}), Catch::StartsWith("RANK:"));
  CHECK_THAT(error_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
             Catch::StartsWith("RANK:") && Catch::Contains("RANK=4 is not below WORLD_SIZE=4"));
  CHECK_THAT(error_of({{"RANK", "3"}}),
             Catch::StartsWith("WORLD_SIZE:") &&
                 Catch::Contains("RANK is set but WORLD_SIZE is not"));
  CHECK_THAT(error_of({{"WORLD_SIZE", "3"}}), Catch::StartsWith("RANK:"));
  CHECK_THAT(error_of({{"RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "4"},
                       {"LOCAL_WORLD_SIZE", "4"}}),
             Catch::StartsWith("LOCAL_RANK:") &&
                 Catch::Contains("LOCAL_RANK=4 is not below LOCAL_WORLD_SIZE=4"));
  CHECK_THAT(error_of({{"RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "3"}}),
             Catch::StartsWith("LOCAL_RANK:") && Catch::Contains("more than the global rank"));
  CHECK_THAT(error_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}}),
             Catch::StartsWith("LOCAL_WORLD_SIZE:"));
  CHECK_THAT(error_of({{"SLURM_PROCID", "1"}}),
             Catch::StartsWith("SLURM_NTASKS:") && Catch::Contains("slurm sets both"));
  CHECK_THAT(error_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_NPROCS", "2"}}),
             Catch::StartsWith("SLURM_NTASKS:") && Catch::Contains("disagree"));
  CHECK_THAT(error_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"},
                       {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}),
             Catch::Contains("SLURM says this task is rank 1 of 4 but Open MPI says rank 0 of 4"));
  CHECK_THAT(error_of({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
             Catch::StartsWith("OMPI_COMM_WORLD_RANK:"));
}

TEST_CASE("launch env: reads the process environment", "[distributed][env]") {
  const char* names[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* n : names) {
    const char* v = std::getenv(n);
    saved[n] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "3", 1);
  setenv("LOCAL_RANK", "0", 1);
  unsetenv("LOCAL_WORLD_SIZE");
  const LaunchInfo info = mploader::launch_info_from_env();
  for (const auto& [n, v] : saved) {
    if (v) setenv(n.c_str(), v->c_str(), 1); else unsetenv(n.c_str());
  }
  CHECK(info.launcher == "torchrun");
  CHECK(info.rank == 2);
  CHECK(info.world_size == 3);
  CHECK(info.local_rank == 0);
}

}  // namespace test_distributed_env
