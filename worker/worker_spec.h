// WorkerSpec: everything a worker process needs to know, as one value. Built in the main
// process for each worker and handed over unchanged, whatever the start method: in memory to a
// forked worker, as text in the environment to a spawned one, over the socket to a forkserver.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mploader::worker {

struct WorkerSpec {
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

// One line of text, and back; nullopt for text that is not a spec of this version.
std::string encode_spec(const WorkerSpec& spec);
[[nodiscard]] std::optional<WorkerSpec> decode_spec(const std::string& text);

constexpr int kSpawnFailedExit = 72;  // exec or rebuilding in the new process failed
constexpr const char* kSpawnEnv = "MPLOADER_SPAWNED_WORKER";

}  // namespace mploader::worker
