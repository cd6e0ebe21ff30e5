#include "supervise/in_flight.h"

namespace mploader::detail {

void InFlightTable::add(size_t worker, uint32_t descriptor, InFlightTask task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_[worker].emplace_back(descriptor, std::move(task));
}

std::optional<InFlightTask> InFlightTable::take(size_t worker, uint32_t descriptor) {
  auto& list = tasks_[worker];
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].first != descriptor) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    InFlightTask task = std::move(list[i].second);
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    return task;
  }
  return std::nullopt;
}

std::vector<InFlightTask> InFlightTable::take_all(size_t worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<InFlightTask> all;
  for (auto& entry : tasks_[worker]) all.push_back(std::move(entry.second));
  tasks_[worker].clear();
  return all;
}

std::vector<InFlightBatch> InFlightTable::snapshot(size_t worker) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<InFlightBatch> out;
  for (const auto& entry : tasks_[worker]) out.push_back(entry.second.batch);
  return out;
}

}  // namespace mploader::detail
