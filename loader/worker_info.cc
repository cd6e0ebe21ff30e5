#include <mploader/worker_info.h>

#include "loader/worker_info_setter.h"

namespace mploader {
namespace {
std::optional<WorkerInfo> g_worker_info;  // set once in each worker, right after fork
}  // namespace

std::optional<WorkerInfo> worker_info() { return g_worker_info; }

namespace detail {
void set_worker_info(const WorkerInfo& info) { g_worker_info = info; }
}  // namespace detail

}  // namespace mploader
