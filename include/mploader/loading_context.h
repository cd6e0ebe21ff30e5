/// @file
/// What a Loader tells the dataset code it calls: the seed and epoch being loaded
/// (loading_context()), a per-sample seed for random choices that must not depend on which
/// worker loads the sample (sample_seed()), and where a sample that could not be loaded is
/// reported (report_skipped_sample()). Works in worker processes and, with num_workers = 0, in
/// the training process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mploader {

/// What a Loader is loading while it calls the dataset, for randomness that belongs to the
/// sample rather than to the worker that loads it (see sample_seed()).
struct LoadingContext {
  uint64_t seed = 0;   ///< LoaderOptions::seed
  uint64_t epoch = 0;  ///< The epoch of the batch being built.
};

/// The loading context of the calling code: set in worker processes, and in the training
/// process while a Loader with num_workers = 0 builds a batch; nullopt elsewhere (a dataset used
/// on its own, libtorch's loader).
std::optional<LoadingContext> loading_context();

/// The seed of sample `index`'s random choices in `epoch` of a Loader seeded `seed`
/// (splitmix64 over the three): it depends on the sample alone, so a random crop is the same
/// with any number of workers, any start method, and after a resume.
uint64_t sample_seed(uint64_t seed, uint64_t epoch, int64_t index);

/// Tells the Loader that sample `index` could not be loaded (a corrupt file, say) and that the
/// dataset wrote sample `substitute` in its place (-1 when none). Call it from get(), write()
/// or write_batch(): the Loader counts the skip and lists it, with `source` (the file's path)
/// and `reason`, in LoaderStats::skipped_samples and LoaderStats::skipped, whichever process
/// the dataset runs in. Outside a Loader's call (a dataset used on its own) it does nothing.
void report_skipped_sample(int64_t index, int64_t substitute, const std::string& source,
                           const std::string& reason);

}  // namespace mploader
