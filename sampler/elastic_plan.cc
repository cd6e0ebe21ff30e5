#include "sampler/elastic_plan.h"

#include <algorithm>

namespace mploader::detail {
namespace {

size_t batches_in(int64_t n, int64_t batch_size, bool drop_last) {
  return static_cast<size_t>(drop_last ? n / batch_size : (n + batch_size - 1) / batch_size);
}

// Evens `out` out at `target` steps: split while short, then repeat from the start; drop the
// tail while long.
void even_out(ResumedBatches& out, size_t target) {
  out.split = split_until(out.batches, target, [](size_t) {});
  for (size_t i = 0; out.batches.size() < target && !out.batches.empty(); ++i) {
    std::vector<int64_t> again = out.batches[i];
    out.batches.push_back(std::move(again));
    ++out.padded;
  }
  if (out.batches.size() > target) {
    out.dropped = out.batches.size() - target;
    out.batches.resize(target);
  }
}

}  // namespace

std::pair<int64_t, int64_t> even_share(int64_t total, int64_t world, int64_t rank) {
  return {total * rank / world, total * (rank + 1) / world};
}

size_t split_until(std::vector<std::vector<int64_t>>& batches, size_t target,
                   const std::function<void(size_t)>& on_split) {
  size_t split = 0;
  while (batches.size() < target && !batches.empty()) {
    size_t largest = 0;
    for (size_t b = 1; b < batches.size(); ++b) {
      if (batches[b].size() > batches[largest].size()) largest = b;
    }
    if (batches[largest].size() < 2) break;
    std::vector<int64_t>& whole = batches[largest];
    const auto half = whole.begin() + static_cast<ptrdiff_t>((whole.size() + 1) / 2);
    std::vector<int64_t> second(half, whole.end());
    whole.erase(half, whole.end());
    batches.insert(batches.begin() + static_cast<ptrdiff_t>(largest + 1), std::move(second));
    on_split(largest);
    ++split;
  }
  return split;
}

ResumedBatches resume_by_samples(const std::vector<int64_t>& remaining, int64_t world,
                                 int64_t rank, int64_t batch_size, bool drop_last) {
  const int64_t total = static_cast<int64_t>(remaining.size());
  ResumedBatches out;
  out.fewest = SIZE_MAX;
  for (int64_t r = 0; r < world; ++r) {
    const auto [b, e] = even_share(total, world, r);
    out.fewest = std::min(out.fewest, batches_in(e - b, batch_size, drop_last));
    out.most = std::max(out.most, batches_in(e - b, batch_size, drop_last));
  }
  const auto [begin, end] = even_share(total, world, rank);
  for (int64_t at = begin; at < end; at += batch_size) {
    const int64_t stop = std::min(end, at + batch_size);
    if (drop_last && stop - at < batch_size) break;
    out.batches.emplace_back(remaining.begin() + at, remaining.begin() + stop);
  }
  even_out(out, drop_last ? out.fewest : out.most);
  return out;
}

ResumedBatches resume_by_groups(const std::vector<std::vector<int64_t>>& groups, int64_t world,
                                int64_t rank) {
  std::vector<std::vector<int64_t>> units = groups;
  split_until(units, static_cast<size_t>(world), [](size_t) {});  // a group for every rank
  const int64_t total = static_cast<int64_t>(units.size());
  ResumedBatches out;
  out.fewest = SIZE_MAX;
  for (int64_t r = 0; r < world; ++r) {
    const auto [b, e] = even_share(total, world, r);
    out.fewest = std::min(out.fewest, static_cast<size_t>(e - b));
    out.most = std::max(out.most, static_cast<size_t>(e - b));
  }
  const auto [begin, end] = even_share(total, world, rank);
  out.batches.assign(units.begin() + begin, units.begin() + end);
  even_out(out, out.most);
  return out;
}

}  // namespace mploader::detail
