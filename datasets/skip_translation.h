// datasets/: datasets over files (.npy, token files) and datasets made of others (ConcatDataset,
// Subset); here, the sources' skip reports turned into the outer index space.
//
// SkipTranslation: while one is alive on a thread, the skips a source reports
// (report_skipped_sample) reach the Loader with their indices in the outer dataset's space.
#pragma once

#include "core/loading_scope.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mploader::detail {

// Subclasses say how a source's index becomes the outer one. Outside a Loader (no sink) it
// does nothing and costs one thread-local read.
class SkipTranslation : public SkipSink {
 public:
  SkipTranslation();
  SkipTranslation(const SkipTranslation&) = delete;
  SkipTranslation& operator=(const SkipTranslation&) = delete;

  void add(int64_t index, int64_t substitute, uint64_t epoch, const std::string& source,
           const std::string& reason) override;

 protected:
  // The outer index of source index `index`; -1 when it has none. `substitute`: the index is a
  // replacement's (which may lie outside a Subset), not the sample being loaded.
  virtual int64_t outer(int64_t index, bool substitute) = 0;

 private:
  SkipSink* outer_sink_;
  std::optional<ScopedLoadingScope> scope_;
};

// A ConcatDataset's source: its indices start at `offset`.
class OffsetSkipTranslation final : public SkipTranslation {
 public:
  explicit OffsetSkipTranslation(int64_t offset) : offset_(offset) {}

 private:
  int64_t outer(int64_t index, bool) override { return index < 0 ? -1 : offset_ + index; }
  int64_t offset_;
};

}  // namespace mploader::detail
