#include "core/loading_scope.h"

#include <mploader/dataset.h>

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
