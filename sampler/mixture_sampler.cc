// MixtureSampler: sources drawn in fixed proportions, each read in passes, per (seed, epoch).
#include "sampler/epoch_limit.h"
#include "sampler/mixture_check.h"
#include "sampler/weights.h"
#include "util/splitmix.h"

#include <mploader/errors.h>
#include <mploader/mixture.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

namespace mploader {
namespace {

const char* const kWho = "MixtureSampler";

// What an epoch that ends when a source runs out reserves before its first draw.
constexpr size_t kInitialCapacity = size_t{1} << 16;

// Generators for one epoch, each seeded by a distinct mix of (seed, epoch, purpose, ...), so
// that changing one source's pass does not move the choices of another. Each value is hashed
// before the seed so far is mixed in (mix_seed(value, so_far)): the order these draws were made
// in.
using detail::mix_seed;

// Where one source is in its current pass.
struct SourceCursor {
  std::vector<int64_t> order;  // the current pass's local indices; empty before the first
  size_t next = 0;
  uint64_t passes = 0;  // passes started
  bool ran_out = false;  // its first pass is complete
};

void start_pass(SourceCursor& c, size_t size, bool shuffle, uint64_t pass_seed) {
  c.order.resize(size);
  std::iota(c.order.begin(), c.order.end(), int64_t{0});
  if (shuffle) {
    detail::SplitMix64 rng(pass_seed);
    for (size_t i = size; i > 1; --i) std::swap(c.order[i - 1], c.order[rng.below(i)]);
  }
  c.next = 0;
  ++c.passes;
}

void check_sources(const std::vector<size_t>& sizes, const MixtureOptions& o,
                   const std::string& who) {
  if (sizes.empty()) {
    throw OptionError("source_sizes", "mploader: " + who + " was given no "
                                      "sources; give the size of each (ConcatDataset::sizes())");
  }
  if (o.weights.size() != sizes.size()) {
    throw OptionError("weights", "mploader: " + who + " has " +
                                     std::to_string(o.weights.size()) + " weights for " +
                                     std::to_string(sizes.size()) +
                                     " sources; give one weight per source, in source order");
  }
  detail::check_weights(o.weights, "weights", who);
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] > 0 || o.weights[k] == 0) continue;
    throw OptionError("source_sizes", "mploader: " + who + ": source " +
                                          std::to_string(k) + " has weight " +
                                          detail::weight_text(o.weights[k]) +
                                          " but no samples; give it weight 0 or leave it out");
  }
  if (o.num_samples < 0) {
    throw OptionError("num_samples", "mploader: " + who + ": num_samples is " +
                                         std::to_string(o.num_samples) +
                                         "; give the draws per epoch (0: see MixtureOptions)");
  }
}

// The draws an epoch that waits for sources to run out may be expected to take: each source k
// needs about size_k / p_k draws; kFirstExhausted waits for the quickest, kAllExhausted for the
// slowest.
double expected_draws(const std::vector<size_t>& sizes, const std::vector<double>& p,
                      MixtureEnd end) {
  double quickest = std::numeric_limits<double>::infinity(), slowest = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (p[k] == 0) continue;
    const double draws = static_cast<double>(sizes[k]) / p[k];
    quickest = std::min(quickest, draws);
    slowest = std::max(slowest, draws);
  }
  return end == MixtureEnd::kFirstExhausted ? quickest : slowest;
}

// Refuses an epoch longer than one may hold (detail::kMaxEpochIndices): kCycle's num_samples
// (or the sources' total size), or an epoch that waits for sources to run out (a small weight
// on a large source) for longer than that, unless num_samples bounds it within the limit.
void check_epoch(const std::vector<size_t>& sizes, const std::vector<double>& p,
                 uint64_t total, const MixtureOptions& o, const std::string& who) {
  const auto limit = std::to_string(detail::kMaxEpochIndices);
  const std::string fix = "set num_samples to at most " + limit + " draws per epoch, and run "
                          "more epochs";
  const std::string given = "num_samples = " + std::to_string(o.num_samples);
  if (o.end == MixtureEnd::kCycle) {
    detail::check_epoch_length(o.num_samples > 0 ? static_cast<uint64_t>(o.num_samples) : total,
                               "num_samples", who,
                               o.num_samples > 0 ? given
                                                 : "num_samples = 0 (the sources' total size)",
                               fix);
    return;
  }
  const double expected = expected_draws(sizes, p, o.end);
  if (expected <= static_cast<double>(detail::kMaxEpochIndices)) return;
  if (o.num_samples > 0) {
    detail::check_epoch_length(static_cast<uint64_t>(o.num_samples), "num_samples", who,
                               given + " (the bound on an epoch that ends when sources run out, "
                               "about " + std::to_string(static_cast<int64_t>(expected)) +
                               " draws with these weights)", fix);
    return;
  }
  throw OptionError("num_samples", "mploader: " + who + ": an epoch that ends " +
                                       "when sources run out would take about " +
                                       std::to_string(static_cast<int64_t>(expected)) +
                                       " draws with these weights (a small weight on a large "
                                       "source), more than the " + limit + " one epoch may "
                                       "hold; set num_samples to bound it, or use "
                                       "MixtureEnd::kCycle");
}

}  // namespace

MixtureSampler::MixtureSampler(std::vector<size_t> source_sizes, MixtureOptions options)
    : sizes_(std::move(source_sizes)), options_(std::move(options)) {
  probabilities_ = detail::mixture_probabilities(sizes_, options_, kWho);
  offsets_.assign(1, 0);  // mixture_probabilities checked the sum against int64
  for (size_t s : sizes_) offsets_.push_back(offsets_.back() + static_cast<int64_t>(s));
}

std::vector<int64_t> MixtureSampler::indices(size_t dataset_size, uint64_t epoch) {
  check_fits(dataset_size);
  const uint64_t epoch_seed = mix_seed(epoch, options_.seed);
  const detail::SourcePicker picker(probabilities_);
  size_t limit = static_cast<size_t>(options_.num_samples);
  if (limit == 0) {
    limit = options_.end == MixtureEnd::kCycle ? static_cast<size_t>(offsets_.back())
                                               : std::numeric_limits<size_t>::max();
  }
  size_t left_to_run_out = static_cast<size_t>(
      std::count_if(probabilities_.begin(), probabilities_.end(), [](double p) { return p > 0; }));
  std::vector<SourceCursor> cursors(sizes_.size());
  detail::SplitMix64 pick(mix_seed(0, epoch_seed));
  std::vector<int64_t> out;
  // kCycle's length is known and bounded; an epoch that ends when a source runs out may be
  // far shorter than the sources (a large source of weight 0), so it grows as it goes.
  out.reserve(options_.end == MixtureEnd::kCycle ? limit
                                                 : std::min(limit, kInitialCapacity));
  while (out.size() < limit) {
    const size_t k = picker.pick(pick.uniform());
    SourceCursor& c = cursors[k];
    if (c.next == c.order.size()) {
      const uint64_t pass_seed = mix_seed(c.passes, mix_seed(k + 1, epoch_seed));
      start_pass(c, sizes_[k], options_.shuffle, pass_seed);
    }
    out.push_back(offsets_[k] + c.order[c.next++]);
    if (c.next < c.order.size() || c.ran_out) continue;
    c.ran_out = true;
    if (options_.end == MixtureEnd::kFirstExhausted) break;
    if (options_.end == MixtureEnd::kAllExhausted && --left_to_run_out == 0) break;
  }
  return out;
}

void MixtureSampler::check_fits(size_t dataset_size) const {
  if (static_cast<int64_t>(dataset_size) == offsets_.back()) return;
  throw OptionError("sampler", std::string("mploader: ") + kWho + " was built for sources of " +
                                   std::to_string(offsets_.back()) +
                                   " samples in all, and the dataset has " +
                                   std::to_string(dataset_size) +
                                   "; build it from the sizes of the ConcatDataset the Loader "
                                   "reads (ConcatDataset::sizes())");
}

size_t MixtureSampler::source_of(int64_t index) const {
  return static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), index) -
                             offsets_.begin()) - 1;
}

namespace detail {

std::vector<double> mixture_probabilities(const std::vector<size_t>& sizes,
                                          const MixtureOptions& options, const std::string& who) {
  check_sources(sizes, options, who);
  const std::vector<double> weights = summable_weights(options.weights, "weights", who);
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> p;
  for (double w : weights) p.push_back(w / sum);
  uint64_t total = 0;
  for (size_t n : sizes) {
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - total) {
      throw OptionError("source_sizes",
                        "mploader: " + who + ": the sources' sizes add up past int64");
    }
    total += n;
  }
  check_epoch(sizes, p, total, options, who);
  return p;
}

}  // namespace detail
}  // namespace mploader
