// What the dataset's code can ask of the Loader that calls it: the loading context (seed and
// epoch) and where report_skipped_sample() sends its records. A worker process sets both for
// the whole process; the training process, with num_workers = 0, only for the calling thread
// while it builds a batch (a Scoped* object), since several Loaders may share the process.
#pragma once

#include <mploader/loading_context.h>

#include <cstdint>
#include <string>

namespace mploader::detail {

// Receives the skips a dataset reports.
class SkipSink {
 public:
  virtual ~SkipSink() = default;
  virtual void add(int64_t index, int64_t substitute, uint64_t epoch, const std::string& source,
                   const std::string& reason) = 0;
};

// A worker process, once: its sink and its context for good. `sink` must outlive every call.
void set_process_skip_sink(SkipSink* sink);
void set_process_loading_context(const LoadingContext& context);
// Where report_skipped_sample() sends a record now (the thread's, else the process's; nullptr
// outside a Loader), so that a dataset made of others can translate its sources' indices.
SkipSink* current_skip_sink();
// sample_seed() of sample `index` under the calling code's loading context, or of seed 0 and
// epoch 0 outside a Loader: what a dataset seeds a sample's random transforms with.
uint64_t context_sample_seed(int64_t index);

// The calling thread's sink and context while alive; they take precedence over the process's.
class ScopedLoadingScope {
 public:
  ScopedLoadingScope(SkipSink* sink, const LoadingContext& context);
  ~ScopedLoadingScope();
  ScopedLoadingScope(const ScopedLoadingScope&) = delete;
  ScopedLoadingScope& operator=(const ScopedLoadingScope&) = delete;

 private:
  SkipSink* previous_sink_;
  std::optional<LoadingContext> previous_context_;
};

}  // namespace mploader::detail
