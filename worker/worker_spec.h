// WorkerSpec: everything a worker process needs to know, as one value. Built in the main
// process for each worker and handed over unchanged, whatever the start method: in memory to a
// forked worker, as text in a memfd to a spawned one (named by an environment variable) and
// to a forkserver (sent over its socket).
//
// Plain values; no shared state.
#pragma once

#include "ipc/sealed_bytes.h"
#include "ipc/status.h"
#include "ipc/unique_fd.h"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mploader::worker {

// What every worker of one pool is told alike. The loader builds it once from its options
// (loader/component_settings.h); the pool puts it into each worker's spec unchanged.
struct WorkerSettings {
  uint64_t seed = 0;         // LoaderOptions::seed: with the epoch and worker id, each seed
  uint64_t first_epoch = 0;  // the epoch current when the workers start (their first seed)
  int64_t rank = 0;
  int64_t world_size = 1;
  bool allow_overflow = true;  // a batch larger than its slot goes to a one-off segment
  // Set with spawn and forkserver only: the recipes a worker rebuilds dataset and collator from.
  std::string dataset_factory;
  // In shared memory, made once per loader and shared by every copy of the settings (each
  // pool's, each spec's) and mapped by every worker, never copied: a recipe can be as large as
  // the dataset (a pickled Python one). Null: empty.
  std::shared_ptr<const ipc::SealedBytes> dataset_config;
  // Descriptors the dataset's recipe refers to (the shared memory of a Python dataset's
  // SharedDict and SharedList), handed to every spawned worker beside it, in order. Null: none.
  std::shared_ptr<const std::vector<ipc::UniqueFd>> dataset_fds;
  std::string collator_recipe;
};

// At most this many dataset_fds: with the channel's, the spec's and the recipe's, they travel
// to a forkserver in one message (ipc::kMaxFdsPerMessage).
constexpr size_t kMaxDatasetFds = 32;

// The settings' dataset recipe ("" when none).
std::string_view dataset_config_of(const WorkerSettings& s);

// One worker: the shared settings, who it is, and the descriptors of its own channel. The pool
// fills in all but the settings.
struct WorkerSpec {
  WorkerSettings settings;
  int worker_id = 0;
  // WorkerInfo::num_workers: the pool's worker slots (PoolConfig::worker_slots), so the ids
  // run 0 .. worker_slots - 1; the slot probe's one process reports the loader's pool.
  int worker_slots = 0;
  pid_t parent_pid = 0;
  int region_fd = -1;
  uint64_t region_bytes = 0;
  int task_event_fd = -1;  // main -> worker: tasks were pushed
  int done_event_fd = -1;  // worker -> main: results were pushed
  int socket_fd = -1;      // worker's end, for sending overflow segments
  // In a new process until map_config(): the descriptor of the dataset recipe's shared memory
  // and its size (the main process's are those of settings.dataset_config).
  int config_fd = -1;
  uint64_t config_bytes = 0;
  // In a new process: the numbers of the dataset_fds there, closed once the dataset is built.
  std::vector<int> dataset_fd_numbers;
};

// The numbers of the spec's dataset descriptors: the settings' own where they hold them (the
// main process), else what a parsed spec carries.
std::vector<int> dataset_fds_of(const WorkerSpec& spec);

bool operator==(const WorkerSettings& a, const WorkerSettings& b);
bool operator==(const WorkerSpec& a, const WorkerSpec& b);

// A header line of the numbers and the recipes' lengths, then the factory's name and the
// collator's recipe; and back: nullopt for text that is not a spec of this version, or whose
// lengths do not add up. The dataset's recipe is not in the text: the header names the
// descriptor of its shared memory (a spawned worker inherits it; a forkserver is sent it).
std::string encode_spec(const WorkerSpec& spec);
[[nodiscard]] std::optional<WorkerSpec> decode_spec(const std::string& text);

// The spec's text in a memfd (close-on-exec, sealed), for a worker that does not share this
// process's memory: a recipe is then bounded by memory only, where one environment variable
// holds 128 KiB and one forkserver message 64 KiB.
ipc::Result<ipc::UniqueFd> spec_to_memfd(const WorkerSpec& spec);
// The spec in such a descriptor, read from its start; nullopt for a read error or text that is
// not a spec of this version.
[[nodiscard]] std::optional<WorkerSpec> spec_from_fd(int fd);
// In the new process: maps the dataset recipe that config_fd holds (and closes config_fd) into
// settings.dataset_config. Nothing to do when there is none.
[[nodiscard]] ipc::Status map_config(WorkerSpec& spec);

constexpr int kSpawnFailedExit = 72;  // exec or rebuilding in the new process failed
// Set in a spawned worker's environment to the number of the descriptor holding its spec.
constexpr const char* kSpawnEnv = "MPLOADER_SPAWNED_WORKER";

}  // namespace mploader::worker
