// The epochs of LoaderStats, and the end-of-epoch judgement (loader/epoch_report.h).
#include "loader/epoch_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

namespace mploader::detail {
namespace {

// The loop may wait this share of an epoch before the loader counts as holding it back.
constexpr double kWaitShare = 0.1;
// Workers busy this share of their time count as saturated.
constexpr double kBusyShare = 0.8;

uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100.0 * share);
  return text;
}

std::string seconds(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", static_cast<double>(ns) / 1e9);
  return text;
}

// "read 71%, decode 20%, write 8%, hand-off 1%": the stages with time in them.
std::string stage_split(const StageTimes& t) {
  const uint64_t total = t.total_ns();
  if (total == 0) return "no busy time";
  const std::pair<const char*, uint64_t> stages[] = {
      {"read", t.read_ns},   {"decode", t.decode_ns},     {"transform", t.transform_ns},
      {"write", t.write_ns}, {"hand-off", t.handoff_ns}};
  std::string text;
  for (const auto& [name, ns] : stages) {
    if (ns == 0) continue;
    text += (text.empty() ? "" : ", ") + std::string(name) + " " +
            percent(static_cast<double>(ns) / static_cast<double>(total));
  }
  return text;
}

// The workers that would have kept up: their busy time over the time the loop ran, with a
// worker of headroom.
int64_t workers_to_keep_up(const EpochStats& e) {
  const double busy = static_cast<double>(e.busy_ns) / static_cast<double>(e.wall_ns);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(busy)) + 1);
}

std::string advice_when_loop_bound(const EpochStats& e) {
  const int64_t enough = workers_to_keep_up(e);
  if (enough >= e.workers_running) return "the loader keeps up; nothing to change";
  return "the loader keeps up; num_workers = " + std::to_string(enough) +
         " would too, with less memory and CPU";
}

std::string advice_when_compute_bound(const EpochStats& e, const EpochContext& c) {
  if (c.cpu_budget == 0 || e.workers_running < c.cpu_budget) {
    const int64_t more = c.cpu_budget > 0 ? std::min(c.cpu_budget, e.workers_running * 2)
                                          : e.workers_running * 2;
    return "raise num_workers to " + std::to_string(std::max(more, e.workers_running + 1)) +
           (c.cpu_budget > 0 ? " (this process may use " + std::to_string(c.cpu_budget) +
                                   " CPUs, by " + c.cpu_budget_source + ")"
                             : "");
  }
  return "the workers already use all " + std::to_string(c.cpu_budget) + " CPUs (" +
         c.cpu_budget_source + "): more workers would only take turns. Make each sample "
         "cheaper (the split above shows where its time goes), or give the job more CPUs";
}

std::string advice_when_handoff_bound(const EpochStats& e, const EpochContext& c) {
  if (c.in_order && e.head_of_line_ns * 2 > e.wait_ns) {
    return "most of the wait (" + seconds(e.head_of_line_ns) + ") was for a batch due next "
           "while later ones were done: some batches are much slower than others. Set "
           "in_order = false, or even out the samples' cost";
  }
  return "raise prefetch_factor (now " + std::to_string(c.prefetch_factor) +
         ") so that batches are ready before the loop asks, or check what the training loop "
         "does between batches that delays the workers";
}

std::string advice(const EpochStats& e, const EpochContext& c) {
  switch (e.bottleneck) {
    case Bottleneck::kLoop: return advice_when_loop_bound(e);
    case Bottleneck::kWorkersCompute: return advice_when_compute_bound(e, c);
    case Bottleneck::kWorkersIo:
      return "raise num_workers to " + std::to_string(e.workers_running * 2) +
             ": workers that wait on I/O may outnumber the CPUs";
    case Bottleneck::kHandOff: return advice_when_handoff_bound(e, c);
    case Bottleneck::kNone: break;
  }
  return "";
}

const char* bottleneck_words(Bottleneck b) {
  switch (b) {
    case Bottleneck::kLoop: return "the training loop set the pace";
    case Bottleneck::kWorkersCompute: return "the workers' computing held the loop back";
    case Bottleneck::kWorkersIo: return "the workers' waiting (I/O) held the loop back";
    case Bottleneck::kHandOff: return "batches reached the loop late, though workers had time";
    case Bottleneck::kNone: break;
  }
  return "";
}

Bottleneck classify(const EpochStats& e) {
  if (e.workers_running == 0 || e.batches == 0 || e.wall_ns == 0) return Bottleneck::kNone;
  const double waited = static_cast<double>(e.wait_ns) / static_cast<double>(e.wall_ns);
  if (waited <= kWaitShare) return Bottleneck::kLoop;
  const double capacity =
      static_cast<double>(e.wall_ns) * static_cast<double>(e.workers_running);
  if (static_cast<double>(e.busy_ns) < kBusyShare * capacity) return Bottleneck::kHandOff;
  const double on_cpu = static_cast<double>(e.cpu_ns) / static_cast<double>(e.busy_ns);
  return on_cpu < kWaitingOnCpuShare ? Bottleneck::kWorkersIo : Bottleneck::kWorkersCompute;
}

}  // namespace

void judge_epoch(EpochStats& e, const EpochContext& context) {
  e.bottleneck = classify(e);
  if (e.bottleneck == Bottleneck::kNone) {
    e.summary.clear();
    return;
  }
  const double wall = static_cast<double>(e.wall_ns);
  const double capacity = wall * static_cast<double>(e.workers_running);
  // The CPU time also covers a worker's bookkeeping between tasks, so it can pass the busy
  // time when tasks are short.
  const double on_cpu = e.busy_ns == 0 ? 0
                                       : std::min(1.0, static_cast<double>(e.cpu_ns) /
                                                           static_cast<double>(e.busy_ns));
  e.summary = "mploader: epoch " + std::to_string(e.epoch) + ": " + std::to_string(e.batches) +
              " batches in " + seconds(e.wall_ns) + "; the loop waited " +
              percent(static_cast<double>(e.wait_ns) / wall) + " of it; " +
              std::to_string(e.workers_running) + " workers were busy " +
              percent(static_cast<double>(e.busy_ns) / capacity) + " of theirs (" +
              stage_split(e.stages) + "), on a CPU for " + percent(on_cpu) + " of that: " +
              bottleneck_words(e.bottleneck) + "; " + advice(e, context);
}

EpochLedger::Totals EpochLedger::totals_of(const LoaderStats& s, Clock::time_point at) {
  Totals t;
  t.at = at;
  t.batches = s.batches;
  t.wait_ns = s.wait_ns;
  t.head_of_line_ns = s.head_of_line_ns;
  for (const WorkerStats& w : s.workers) {
    t.busy_ns += w.busy_ns;
    t.cpu_ns += w.cpu_ns;
    t.stages += w.stages;
  }
  return t;
}

// Counters can go back when a worker is replaced (its counters start again): those differences
// count as zero rather than wrapping around.
EpochStats EpochLedger::measure(const Totals& from, const Totals& to) const {
  EpochStats e;
  e.epoch = running_.value_or(0);
  e.workers_running = context_.workers_running;
  e.cpu_budget = context_.cpu_budget;
  e.wall_ns = static_cast<uint64_t>(
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(to.at - from.at)
                               .count()));
  e.batches = minus(to.batches, from.batches);
  e.wait_ns = minus(to.wait_ns, from.wait_ns);
  e.head_of_line_ns = minus(to.head_of_line_ns, from.head_of_line_ns);
  e.busy_ns = minus(to.busy_ns, from.busy_ns);
  e.cpu_ns = minus(to.cpu_ns, from.cpu_ns);
  e.stages.read_ns = minus(to.stages.read_ns, from.stages.read_ns);
  e.stages.decode_ns = minus(to.stages.decode_ns, from.stages.decode_ns);
  e.stages.transform_ns = minus(to.stages.transform_ns, from.stages.transform_ns);
  e.stages.write_ns = minus(to.stages.write_ns, from.stages.write_ns);
  e.stages.handoff_ns = minus(to.stages.handoff_ns, from.stages.handoff_ns);
  judge_epoch(e, context_);
  return e;
}

void EpochLedger::keep(EpochStats e) {
  kept_.push_back(std::move(e));
  if (kept_.size() > kMaxListedEpochs) kept_.pop_front();
}

void EpochLedger::start(uint64_t epoch, const LoaderStats& totals) {
  const Totals now = totals_of(totals, Clock::now());
  if (running_) keep(measure(start_, now));
  running_ = epoch;
  start_ = now;
}

std::optional<EpochStats> EpochLedger::finish(const LoaderStats& totals) {
  if (!running_) return std::nullopt;
  EpochStats e = measure(start_, totals_of(totals, Clock::now()));
  e.finished = true;
  keep(e);
  running_.reset();
  return e;
}

void EpochLedger::fill(LoaderStats& s) const {
  s.epochs.assign(kept_.begin(), kept_.end());
  if (running_) s.epochs.push_back(measure(start_, totals_of(s, Clock::now())));
  if (s.epochs.size() > kMaxListedEpochs) s.epochs.erase(s.epochs.begin());
}

}  // namespace mploader::detail
