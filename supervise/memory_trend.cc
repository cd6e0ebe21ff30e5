#include "supervise/memory_trend.h"

#include "util/units.h"

#include <algorithm>

namespace mploader::detail {
namespace {

// A rise is a sample at least this far above the last one: creeping growth adds up to one.
int64_t rise_step(int64_t warm_private) {
  return std::max<int64_t>(int64_t{4} << 20, warm_private / 100);
}

}  // namespace

void MemoryTrend::new_process(Clock::time_point now, uint64_t tasks_done) {
  warm_.reset();
  previous_.reset();
  high_ = 0;
  copied_ = 0;
  rises_ = 0;
  tasks_at_start_ = tasks_done;
  start_samples(now, summary_.epoch, summary_.growth_warned);
}

void MemoryTrend::new_epoch(uint64_t epoch, Clock::time_point now) {
  start_samples(now, epoch, false);
}

void MemoryTrend::start_samples(Clock::time_point now, uint64_t epoch, bool warned) {
  origin_ = now;
  summary_ = WorkerMemory{};
  summary_.epoch = epoch;
  summary_.growth_warned = warned;
  series_.clear();
  latest_.reset();
  stride_ = 1;
}

// Keeps every stride_-th sample; when that makes too many, every other one of those.
void MemoryTrend::record(const MemoryPoint& p) {
  if (summary_.samples == 0) {
    summary_.private_start_bytes = p.private_bytes;
    summary_.shared_start_bytes = p.shared_bytes;
  }
  const uint64_t number = summary_.samples++;
  summary_.private_bytes = p.private_bytes;
  summary_.shared_bytes = p.shared_bytes;
  summary_.private_peak_bytes = std::max(summary_.private_peak_bytes, p.private_bytes);
  latest_ = p;
  if (number % stride_ != 0) return;
  series_.push_back(p);
  if (series_.size() <= kMaxPoints) return;
  size_t kept = 0;
  for (size_t i = 0; i < series_.size(); i += 2) series_[kept++] = series_[i];
  series_.resize(kept);
  stride_ *= 2;
}

std::optional<MemoryGrowth> MemoryTrend::add(const MemorySplit& memory, uint64_t tasks_done,
                                             Clock::time_point now) {
  MemoryPoint p;
  p.ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - origin_).count();
  p.tasks = tasks_done - std::min(tasks_done, tasks_at_start_);
  p.private_bytes = memory.private_bytes;
  p.shared_bytes = memory.shared_bytes;
  record(p);
  const std::optional<MemoryPoint> before = previous_;
  previous_ = p;
  if (warm_ && before) {
    const int64_t shared_fell = std::max<int64_t>(0, before->shared_bytes - p.shared_bytes);
    const int64_t private_rose = std::max<int64_t>(0, p.private_bytes - before->private_bytes);
    copied_ += std::min(shared_fell, private_rose);
  }
  if (!warm_) {
    if (p.tasks >= kWarmupTasks) {
      warm_ = p;
      high_ = p.private_bytes;
    }
    return std::nullopt;
  }
  const bool rose = p.private_bytes >= high_ + rise_step(warm_->private_bytes);
  if (!rose) return std::nullopt;
  high_ = p.private_bytes;
  ++rises_;
  const int64_t growth = p.private_bytes - warm_->private_bytes;
  const int64_t needed = std::max(kMinGrowthBytes, warm_->private_bytes / 4);
  if (summary_.growth_warned || rises_ < kMinRises || growth < needed) return std::nullopt;
  summary_.growth_warned = true;
  return MemoryGrowth{summary_.epoch, *warm_, p, rises_, summary_.shared_start_bytes, copied_};
}

std::vector<MemoryPoint> MemoryTrend::series() const {
  std::vector<MemoryPoint> out = series_;
  if (latest_ && (out.empty() || out.back().ms != latest_->ms)) out.push_back(*latest_);
  return out;
}

namespace {

// Why it grows, judged by what the shared memory did meanwhile, and what to change. Pages
// copied on write leave shared memory as they join private memory, in the same intervals; a
// shared fall with no private rise beside it is memory given back (munmap), no copy.
std::string cause_and_remedies(const MemoryGrowth& g, bool persistent_workers) {
  const int64_t grew = g.now.private_bytes - g.warm.private_bytes;
  const int64_t shared_fell = g.warm.shared_bytes - g.now.shared_bytes;
  if (g.copied_bytes >= grew / 2) {
    return "Its shared memory fell by " + mebibytes(shared_fell) + " meanwhile, as its private "
           "memory rose by " + mebibytes(g.copied_bytes) + " of it: the worker writes to memory "
           "it inherited at fork, and each page it "
           "writes becomes a private copy (copy-on-write). That is data the main process "
           "loaded before the Loader started, which the dataset now modifies (a cache filled "
           "in place, counters, a vector it sorts). Remedies: keep large read-only data in a "
           "memory-mapped file (mploader::NpyArray maps .npy files: all workers share its "
           "pages and never copy them); load or build per-worker state in worker_init, after "
           "the fork, not in the main process; do not write to data the main process holds; " +
           std::string(persistent_workers ? "persistent_workers = true (as now) makes the copies "
                                            "once per run rather than once per epoch."
                                          : "persistent_workers = true would make the copies "
                                            "once per run rather than once per epoch.");
  }
  const std::string shared =
      shared_fell >= grew / 2
          ? "Its shared memory fell by " + mebibytes(shared_fell) + " (" +
                mebibytes(g.warm.shared_bytes) + " -> " + mebibytes(g.now.shared_bytes) +
                ") without its private memory rising with it (" + mebibytes(g.copied_bytes) +
                " at most copied): shared mappings were released (munmap, a closed file), "
                "not copied on write"
          : "Its shared memory stayed level (" + mebibytes(g.warm.shared_bytes) + " -> " +
                mebibytes(g.now.shared_bytes) + ")";
  return shared +
         ": the growth is memory the worker allocates and keeps between batches, a "
         "per-sample cache or a leak in the dataset or a library it calls. Remedies: cache "
         "less per sample, or bound the cache and size it for num_workers copies; read large "
         "arrays through mploader::NpyArray (memory-mapped, shared by all workers) instead of "
         "caching copies; open files and other resources once per worker in worker_init "
         "rather than per sample; " +
         std::string(persistent_workers
                         ? "with persistent_workers = true (as now) the growth carries over "
                           "from epoch to epoch, so a leak is the likelier cause."
                         : "persistent_workers = true would keep a cache that must be filled "
                           "from being refilled every epoch.");
}

// Room left in the worker's cgroup at the rate seen, or why that is unknown.
std::string headroom(const MemoryGrowth& g, const OomCounter& cgroup, int64_t usage,
                     int64_t workers_running) {
  if (cgroup.limit_bytes < 0 || usage < 0) {
    return " No memory limit was found for its cgroup: the OOM killer acts when the machine "
           "runs out.";
  }
  std::string text = " Its memory cgroup (" + cgroup.path + ") allows " +
                     mebibytes(cgroup.limit_bytes) + " and holds " + mebibytes(usage) + " now";
  const uint64_t batches = g.now.tasks - g.warm.tasks;
  const int64_t per_batch =
      batches > 0 ? (g.now.private_bytes - g.warm.private_bytes) / static_cast<int64_t>(batches)
                  : 0;
  if (per_batch > 0 && usage < cgroup.limit_bytes) {
    const int64_t workers = std::max<int64_t>(1, workers_running);
    const int64_t left = (cgroup.limit_bytes - usage) / (per_batch * workers);
    text += "; if all " + std::to_string(workers_running) + " workers grow alike, that is room for "
            "about " + std::to_string(left) + " more batches per worker";
  }
  return text + ".";
}

}  // namespace

std::string memory_growth_warning(int worker, int pid, const MemoryGrowth& g,
                                  const OomCounter& cgroup, int64_t cgroup_usage,
                                  int64_t workers_running, bool persistent_workers) {
  const uint64_t batches = g.now.tasks - g.warm.tasks;
  const int64_t grew = g.now.private_bytes - g.warm.private_bytes;
  std::string rate;
  if (batches > 0) rate = ", " + mebibytes(grew / static_cast<int64_t>(batches)) + " per batch";
  return "mploader: worker " + std::to_string(worker) + " (pid " + std::to_string(pid) +
         ") keeps growing its private memory in epoch " + std::to_string(g.epoch) + ": " +
         mebibytes(g.warm.private_bytes) + " once warm -> " + mebibytes(g.now.private_bytes) +
         " now (+" + mebibytes(grew) + " over " + std::to_string(batches) + " batches" + rate +
         ", rising in " +
         std::to_string(g.rises) + " samples). " + cause_and_remedies(g, persistent_workers) +
         headroom(g, cgroup, cgroup_usage, workers_running) +
         " Loader::stats().workers[" + std::to_string(worker) +
         "].memory has the numbers; this warning comes at most once per worker per epoch.";
}

}  // namespace mploader::detail
