/// @file
/// Resuming an epoch on another number of ranks: a job checkpointed on 4 ranks goes on with 2,
/// or with 3, and every sample the epoch had not yet delivered on any rank comes exactly once,
/// with the same number of steps on every new rank.
///
///   // At a checkpoint, on every rank (a collective):
///   std::string job = mploader::gather_loader_state(*process_group, loader.state_dict());
///   if (rank == 0) write_file("loader.json", job);
///   // Or without c10d: each rank writes loader.state_dict() to its own file, and one process
///   // merges them: mploader::merge_loader_states({text0, text1, text2, text3}).
///
///   // After the restart, on every rank, whatever the new world size:
///   loader.load_state_dict(read_file("loader.json"));
///
/// What resumes elastically: a StreamingDataset (TokenStream, TarShards, your own), and a
/// map-style dataset under DistributedSampler or DistributedBucketSampler (any sampler that is
/// an ElasticSampler). A job state can be loaded on any world size, the same one included; a
/// single rank's state still resumes only that rank, with the same world size.
///
/// What "the same order" means after the change: the epoch's global order (the (seed, epoch)
/// permutation, a StreamingDataset's shard order, the bucket sampler's shuffled batches) stays
/// what it was; the samples of it not yet delivered keep their relative order and are cut into
/// one run per new rank, equal to a sample (a bucket sampler: to a batch). A rank that would take
/// one step fewer than the others splits a batch in two (a shorter batch), so that no sample is
/// repeated or left out. Each new rank therefore sees other samples at each step than any old
/// rank would have, but the job as a whole delivers the epoch's samples exactly once. With
/// drop_last the ranks' short last batches are left out, as in any epoch.
#pragma once

#include <mploader/elastic_sampler.h>
#include <mploader/rank_agreement.h>  // c10d's ProcessGroup and Backend, declared

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mploader {

/// The job state of one epoch from the states every rank's Loader::state_dict() returned at the
/// same step (one per rank, in any order). Throws OptionError("state") naming the rank and the
/// fix when a rank is missing or given twice, when the states are of different epochs, steps,
/// data or options, or when one was saved by a Loader that cannot resume elastically.
std::string merge_loader_states(const std::vector<std::string>& rank_states);

/// Collective over `group` (every rank must call it): gathers each rank's `rank_state`
/// (Loader::state_dict()) and returns merge_loader_states() of them, on every rank alike. Throws
/// what merge_loader_states() throws, on every rank, and Error if mploader was built without
/// c10d. A rank that never calls leaves the others waiting up to `timeout` (0: the group's own).
std::string gather_loader_state(c10d::ProcessGroup& group, const std::string& rank_state,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
/// The same over one c10d backend (libtorch 2.x's c10d::ProcessGroupGloo).
std::string gather_loader_state(c10d::Backend& group, const std::string& rank_state,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

/// What a job state holds, for logs and checks.
struct JobStateSummary {
  uint64_t epoch = 0;       ///< The epoch it resumes.
  int64_t world_size = 0;   ///< Ranks whose states it merged.
  uint64_t steps = 0;       ///< Steps each of them had taken in the epoch.
  uint64_t positions = 0;   ///< Samples in the epoch's global order.
  uint64_t delivered = 0;   ///< Of those, delivered on some rank.
};
/// Throws OptionError("state") for text that is not an intact job state.
JobStateSummary summarize_job_state(const std::string& job_state);

}  // namespace mploader
