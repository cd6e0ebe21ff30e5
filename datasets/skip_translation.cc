#include "datasets/skip_translation.h"

#include <mploader/loading_context.h>

namespace mploader::detail {

SkipTranslation::SkipTranslation() : outer_sink_(current_skip_sink()) {
  if (outer_sink_ == nullptr) return;
  const std::optional<LoadingContext> context = loading_context();
  if (context) scope_.emplace(this, *context);
}

void SkipTranslation::add(int64_t index, int64_t substitute, uint64_t epoch,
                          const std::string& source, const std::string& reason) {
  // Nested composites: outer_sink_ is the next translation out, or the Loader's own sink.
  const int64_t outer_substitute = substitute < 0 ? -1 : outer(substitute, true);
  outer_sink_->add(outer(index, false), outer_substitute, epoch, source, reason);
}

}  // namespace mploader::detail
