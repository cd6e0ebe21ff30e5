// mploader-shuffle-quality: how well three shuffles mix a corpus stored in class order (a
// packed ImageFolder written class by class) in shards, at equal memory of M samples: a full
// shuffle (RandomSampler, which needs every shard at hand), BlockShuffleSampler with blocks of
// M samples, and a stream of shards in a shuffled order through a shuffle buffer of M samples;
// (with the shard sizes: MosaicML's py1b, shards shuffled before blocks are cut; and without). It
// computes orders only, reading no data, and prints a markdown table.
#include "util/splitmix.h"

#include <mploader/block_sampler.h>
#include <mploader/sampler.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Config {
  int64_t samples = 100000;
  int64_t classes = 100;
  int64_t shard_samples = 1000;
  int64_t memory_samples = 10000;
  int64_t batch = 32;
  uint64_t seed = 0;
};

// Each method's numbers, averaged over the epoch's whole batches.
struct Quality {
  double classes_per_batch = 0;
  double class_tv = 0;  // total-variation distance of a batch's class mix from the corpus's
  double shards_per_batch = 0;
  double displacement = 0;  // mean |output position - stored position| / N
  double correlation = 0;   // Spearman's rho between stored and output positions
};

// The corpus: classes in contiguous runs of (nearly) equal size, in class order.
int64_t class_of(int64_t index, const Config& c) { return index * c.classes / c.samples; }

// The corpus's share of class `cls`: its run is [ceil(cls N / C), ceil((cls + 1) N / C)).
double class_share(int64_t cls, const Config& c) {
  auto first = [&](int64_t k) { return (k * c.samples + c.classes - 1) / c.classes; };
  return static_cast<double>(first(cls + 1) - first(cls)) / static_cast<double>(c.samples);
}

// Every sample, its shards in an order drawn from `rng`, each shard's samples in stored order.
std::vector<int64_t> shuffled_shard_reads(const Config& c, mploader::detail::SplitMix64& rng) {
  std::vector<int64_t> shards(static_cast<size_t>((c.samples + c.shard_samples - 1) /
                                                  c.shard_samples));
  for (size_t s = 0; s < shards.size(); ++s) shards[s] = static_cast<int64_t>(s);
  rng.shuffle(shards);
  std::vector<int64_t> reads;
  reads.reserve(static_cast<size_t>(c.samples));
  for (int64_t shard : shards) {
    const int64_t end = std::min(c.samples, (shard + 1) * c.shard_samples);
    for (int64_t read = shard * c.shard_samples; read < end; ++read) reads.push_back(read);
  }
  return reads;
}

// Shards in a shuffled order, read through the classic buffer: fill it with M samples, then
// for each further read let out a random one of the buffer and put the read in its place;
// at the end let out the rest in a random order.
std::vector<int64_t> stream_order(const Config& c) {
  mploader::detail::SplitMix64 rng(mploader::detail::mix_seed(c.seed, 0x73747265616dULL));
  std::vector<int64_t> out, buffer;
  out.reserve(static_cast<size_t>(c.samples));
  buffer.reserve(static_cast<size_t>(c.memory_samples));
  for (int64_t read : shuffled_shard_reads(c, rng)) {
    if (static_cast<int64_t>(buffer.size()) < c.memory_samples) {
      buffer.push_back(read);
      continue;
    }
    int64_t& slot = buffer[rng.below(buffer.size())];
    out.push_back(slot);
    slot = read;
  }
  while (!buffer.empty()) {
    int64_t& slot = buffer[rng.below(buffer.size())];
    out.push_back(slot);
    slot = buffer.back();
    buffer.pop_back();
  }
  return out;
}

// The corpus's shard sizes: shards of shard_samples consecutive samples, the last shorter.
std::vector<int64_t> shard_sizes(const Config& c) {
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < c.samples; at += c.shard_samples) {
    sizes.push_back(std::min(c.shard_samples, c.samples - at));
  }
  return sizes;
}

// Class and shard mix of each whole batch of `order`, added into `q` as means.
void measure_batches(const std::vector<int64_t>& order, const Config& c, Quality& q) {
  std::vector<int64_t> class_count(static_cast<size_t>(c.classes), 0);
  std::vector<int64_t> shard_seen(
      static_cast<size_t>((c.samples + c.shard_samples - 1) / c.shard_samples), -1);
  const int64_t batches = c.samples / c.batch;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> present;
    int64_t shards = 0;
    for (int64_t i = b * c.batch; i < (b + 1) * c.batch; ++i) {
      const int64_t index = order[static_cast<size_t>(i)];
      int64_t& n = class_count[static_cast<size_t>(class_of(index, c))];
      if (n++ == 0) present.push_back(class_of(index, c));
      int64_t& seen = shard_seen[static_cast<size_t>(index / c.shard_samples)];
      if (seen != b) ++shards;
      seen = b;
    }
    // TV = (sum over all classes of |q - p|) / 2; a class absent from the batch adds p, so
    // only the present ones need a look: (1 + sum over present of (|q - p| - p)) / 2.
    double tv = 1;
    for (int64_t cls : present) {
      const double p = class_share(cls, c);
      const double share = static_cast<double>(class_count[static_cast<size_t>(cls)]) / c.batch;
      tv += std::abs(share - p) - p;
      class_count[static_cast<size_t>(cls)] = 0;
    }
    q.classes_per_batch += static_cast<double>(present.size()) / batches;
    q.class_tv += tv / 2 / batches;
    q.shards_per_batch += static_cast<double>(shards) / batches;
  }
}

Quality measure(const std::vector<int64_t>& order, const Config& c) {
  Quality q;
  measure_batches(order, c, q);
  const double n = static_cast<double>(c.samples);
  double moved = 0, squared = 0;
  for (size_t out = 0; out < order.size(); ++out) {
    const double d = static_cast<double>(out) - static_cast<double>(order[out]);
    moved += std::abs(d);
    squared += d * d;
  }
  q.displacement = moved / n / n;
  // Both positions are permutations of 0..N-1, so their ranks are the positions themselves.
  q.correlation = 1 - 6 * squared / (n * (n * n - 1));
  return q;
}

// Classes a batch drawn independently from the corpus's class mix holds on average.
double independent_classes(const Config& c) {
  double sum = 0;
  for (int64_t cls = 0; cls < c.classes; ++cls) {
    sum += 1 - std::pow(1 - class_share(cls, c), static_cast<double>(c.batch));
  }
  return sum;
}

// Empty when the configuration can be measured, else what is wrong and what to do.
std::string config_error(const Config& c) {
  auto bad = [](const std::string& flag, int64_t value, const std::string& fix) {
    return flag + " is " + std::to_string(value) + "; " + fix;
  };
  if (c.samples < 2 || c.samples > 100000000) {
    return bad("--samples", c.samples, "give 2 to 100000000 samples (it holds 4 orders of them)");
  }
  if (c.classes < 1 || c.classes > c.samples) {
    return bad("--classes", c.classes, "give 1 to --samples (" + std::to_string(c.samples) +
                                           ") classes");
  }
  if (c.shard_samples < 1) return bad("--shard-samples", c.shard_samples, "give 1 or more");
  if (c.memory_samples < 1) return bad("--memory-samples", c.memory_samples, "give 1 or more");
  if (c.batch < 1 || c.batch > c.samples) {
    return bad("--batch", c.batch, "give 1 to --samples (" + std::to_string(c.samples) + ")");
  }
  return "";
}

void print_row(const char* method, const char* memory, const Quality& q) {
  std::printf("| %s | %s | %.2f | %.3f | %.2f | %.3f | %.3f |\n", method, memory,
              q.classes_per_batch, q.class_tv, q.shards_per_batch, q.displacement,
              q.correlation);
}

void report(const Config& c) {
  const uint64_t n = static_cast<uint64_t>(c.samples);
  const std::string m = std::to_string(c.memory_samples);
  std::printf("Corpus: %lld samples in class order (%lld classes), shards of %lld samples; "
              "memory %s samples; batches of %lld; seed %llu.\n\n",
              static_cast<long long>(c.samples), static_cast<long long>(c.classes),
              static_cast<long long>(c.shard_samples), m.c_str(),
              static_cast<long long>(c.batch), static_cast<unsigned long long>(c.seed));
  std::printf("| method | memory (samples) | classes/batch | class TV | shards/batch | "
              "mean \\|Δpos\\|/N | Spearman ρ |\n|---|---|---|---|---|---|---|\n");
  print_row("full shuffle (RandomSampler)", "all",
            measure(mploader::RandomSampler(c.seed).indices(n, 0), c));
  const std::string block = "BlockShuffleSampler(block_samples=" + m + ", shard_samples)";
  print_row(block.c_str(), m.c_str(),
            measure(mploader::BlockShuffleSampler(c.memory_samples, c.seed, 1, 0, false,
                                                  shard_sizes(c))
                        .indices(n, 0),
                    c));
  const std::string plain = "BlockShuffleSampler(block_samples=" + m + "), no shard sizes";
  print_row(plain.c_str(), m.c_str(),
            measure(mploader::BlockShuffleSampler(c.memory_samples, c.seed).indices(n, 0), c));
  const std::string stream = "shuffled shards + buffer of " + m;
  print_row(stream.c_str(), m.c_str(), measure(stream_order(c), c));
  std::printf("\nA batch drawn independently from the class mix holds %.2f classes on average; "
              "a uniform shuffle gives mean |Δpos|/N = 1/3 and ρ = 0.\n",
              independent_classes(c));
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"mploader-shuffle-quality: a full shuffle, BlockShuffleSampler and a shard "
               "stream through a shuffle buffer, compared at equal memory over a corpus "
               "stored in class order"};
  app.add_option("--samples", c.samples, "samples in the corpus (N)")->capture_default_str();
  app.add_option("--classes", c.classes, "classes, stored in contiguous runs in class order")
      ->capture_default_str();
  app.add_option("--shard-samples", c.shard_samples, "samples per shard")->capture_default_str();
  app.add_option("--memory-samples", c.memory_samples,
                 "samples each bounded method may hold: block size and shuffle buffer (M)")
      ->capture_default_str();
  app.add_option("--batch", c.batch, "batch size the mix is measured over")
      ->capture_default_str();
  app.add_option("--seed", c.seed, "seed of every order")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const std::string error = config_error(c);
  if (!error.empty()) {
    std::fprintf(stderr, "mploader-shuffle-quality: %s.\n", error.c_str());
    return 2;
  }
  report(c);
  return 0;
}
