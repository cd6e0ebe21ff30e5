// start_method spawn: a worker is this program executed afresh. The forked child keeps only
// the descriptors the worker needs (its region, two eventfds, its socket), puts what it must
// know into one environment variable, and execs /proc/self/exe with the program's own argv.
// The new process reaches mploader::init(), which finds the variable, maps the region,
// rebuilds the dataset and collator from their recipes and runs the worker loop.
#pragma once

#include "worker/worker_loop.h"

#include <mploader/registry.h>

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader::worker {

struct SpawnSpec {
  int worker_id = 0;
  int num_workers = 0;
  pid_t parent_pid = 0;
  int region_fd = -1;
  uint64_t region_bytes = 0;
  int task_event_fd = -1;
  int done_event_fd = -1;
  int socket_fd = -1;
  uint64_t seed = 0;
  uint64_t first_epoch = 0;
  int64_t rank = 0;
  bool allow_overflow = true;
  std::string dataset_factory;
  std::string dataset_config;
  std::string collator_recipe;
};

std::string encode_spec(const SpawnSpec& spec);
std::optional<SpawnSpec> decode_spec(const std::string& text);

// In a forked child: exec the program as a spawned worker. Returns only if exec failed.
void exec_worker(const SpawnSpec& spec);
// In a forked child: exec this program with `name`=`value` in its environment, keeping `fds`
// open across this exec (the new process marks them close-on-exec again). Returns only if
// exec failed.
void exec_self(const char* name, const std::string& value, const std::vector<int>& fds);
// In a new worker process (spawned or forked by a forkserver): mark the spec's descriptors
// close-on-exec, map the region, rebuild the dataset and collator, run the worker loop, exit.
[[noreturn]] void become_worker(const SpawnSpec& spec);
// The worker loop's context for `spec` (every start method describes its worker by a spec).
WorkerContext context_from_spec(const SpawnSpec& spec, ipc::RegionView region,
                                Dataset* dataset, Collator* collator);
// Called by mploader::init(): in a spawned worker, runs it and exits; otherwise returns.
void run_if_spawned();

DatasetFactory find_dataset_factory(const std::string& name);
// Throws std::invalid_argument for an unknown recipe.
std::shared_ptr<Collator> collator_from_recipe(const std::string& recipe);

constexpr int kSpawnFailedExit = 72;  // exec or rebuilding in the new process failed
constexpr const char* kSpawnEnv = "MPLOADER_SPAWNED_WORKER";

}  // namespace mploader::worker
