#include "core/loading_scope.h"

#include "util/splitmix.h"

#include <mploader/loading_context.h>

namespace mploader {
namespace detail {
namespace {
SkipSink* g_process_sink = nullptr;
std::optional<LoadingContext> g_process_context;
thread_local SkipSink* t_sink = nullptr;
thread_local std::optional<LoadingContext> t_context;
}  // namespace

void set_process_skip_sink(SkipSink* sink) { g_process_sink = sink; }
void set_process_loading_context(const LoadingContext& context) { g_process_context = context; }
SkipSink* current_skip_sink() { return t_sink ? t_sink : g_process_sink; }

uint64_t context_sample_seed(int64_t index) {
  const std::optional<LoadingContext> context = t_context ? t_context : g_process_context;
  return context ? sample_seed(context->seed, context->epoch, index) : sample_seed(0, 0, index);
}

ScopedLoadingScope::ScopedLoadingScope(SkipSink* sink, const LoadingContext& context)
    : previous_sink_(t_sink), previous_context_(t_context) {
  t_sink = sink;
  t_context = context;
}

ScopedLoadingScope::~ScopedLoadingScope() {
  t_sink = previous_sink_;
  t_context = previous_context_;
}
}  // namespace detail

// The worker seed's steps (worker/worker_info.cc) over the complemented seed, so that sample
// 3's seed is not worker 3's.
uint64_t sample_seed(uint64_t seed, uint64_t epoch, int64_t index) {
  return detail::splitmix64(detail::mix_seed(~seed, epoch) ^ static_cast<uint64_t>(index));
}

std::optional<LoadingContext> loading_context() {
  return detail::t_context ? detail::t_context : detail::g_process_context;
}

void report_skipped_sample(int64_t index, int64_t substitute, const std::string& source,
                           const std::string& reason) {
  detail::SkipSink* sink = detail::current_skip_sink();
  if (sink == nullptr) return;
  const std::optional<LoadingContext> context = loading_context();
  sink->add(index, substitute, context ? context->epoch : 0, source, reason);
}

}  // namespace mploader
