// The Loader end to end with real worker processes: exactly-once, order, epochs, breaking out,
// batches kept alive, collates, and the in-process path giving the same batches.
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <map>
#include <set>

namespace test_loader {

using namespace mploader;
using testing_datasets::CountingDataset;
using testing_datasets::VarLenDataset;

namespace {

LoaderOptions options(int64_t workers, int64_t batch) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = batch;
  return o;
}

// Labels of one epoch in delivery order; checks each batch's tensors against its indices.
std::vector<int64_t> run_epoch(Loader& loader) {
  std::vector<int64_t> labels;
  for (Batch& b : loader) {
    at::Tensor y = b["label"];
    at::Tensor x = b["x"];
    REQUIRE(y.size(0) == static_cast<int64_t>(b.size()));
    REQUIRE(x.sizes() == at::IntArrayRef({static_cast<int64_t>(b.size()), 4}));
    for (size_t i = 0; i < b.size(); ++i) {
      REQUIRE(y[i].item<int64_t>() == b.indices()[i]);
      REQUIRE(x[i][3].item<float>() == static_cast<float>(b.indices()[i]));
      labels.push_back(y[i].item<int64_t>());
    }
  }
  return labels;
}

bool process_gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_CASE("loader: 2 fork workers, 3 epochs, every index exactly once, in order",
          "[loader][process]") {
  Loader loader(std::make_shared<CountingDataset>(1001), options(2, 16));
  REQUIRE(loader.worker_pids().size() == 2);
  CHECK(loader.batches_per_epoch() == 63);
  for (int epoch = 0; epoch < 3; ++epoch) {
    loader.set_epoch(epoch);
    std::vector<int64_t> labels = run_epoch(loader);
    REQUIRE(labels.size() == 1001);
    for (size_t i = 0; i < labels.size(); ++i) REQUIRE(labels[i] == static_cast<int64_t>(i));
    CHECK(loader.epoch() == static_cast<uint64_t>(epoch));
  }
}

TEST_CASE("loader: shuffled epochs follow the sampler, same with and without workers",
          "[loader][process]") {
  auto o = options(3, 7);
  o.shuffle = true;
  o.seed = 5;
  Loader with_workers(std::make_shared<CountingDataset>(200), o);
  o.num_workers = 0;
  Loader in_process(std::make_shared<CountingDataset>(200), o);
  RandomSampler sampler(5);
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    with_workers.set_epoch(epoch);
    in_process.set_epoch(epoch);
    auto a = run_epoch(with_workers);
    CHECK(a == sampler.indices(200, epoch));
    CHECK(a == run_epoch(in_process));
  }
}

TEST_CASE("loader: without set_epoch each iteration takes the next epoch", "[loader]") {
  auto o = options(1, 10);
  o.shuffle = true;
  Loader loader(std::make_shared<CountingDataset>(50), o);
  auto first = run_epoch(loader);
  CHECK(loader.epoch() == 0);
  auto second = run_epoch(loader);
  CHECK(loader.epoch() == 1);
  CHECK(first != second);
}

TEST_CASE("loader: out of order delivery still gives every index once", "[loader][process]") {
  auto o = options(3, 5);
  o.in_order = false;
  o.drop_last = true;
  Loader loader(std::make_shared<CountingDataset>(103), o);
  auto labels = run_epoch(loader);
  REQUIRE(labels.size() == 100);
  std::sort(labels.begin(), labels.end());
  for (size_t i = 0; i < labels.size(); ++i) CHECK(labels[i] == static_cast<int64_t>(i));
}

TEST_CASE("loader: breaking out mid-epoch, then a full epoch", "[loader][process]") {
  Loader loader(std::make_shared<CountingDataset>(500), options(2, 10));
  for (int round = 0; round < 3; ++round) {
    int seen = 0;
    for (Batch& b : loader) {
      CHECK(b.sequence() == static_cast<uint64_t>(seen));
      if (++seen == 3) break;
    }
  }
  auto labels = run_epoch(loader);
  REQUIRE(labels.size() == 500);
  CHECK(labels.front() == 0);
  CHECK(labels.back() == 499);
}

TEST_CASE("loader: batches kept alive across iterations are not overwritten",
          "[loader][process]") {
  auto o = options(2, 8);
  o.prefetch_factor = 1;  // few slots, so holding batches forces reuse pressure
  Loader loader(std::make_shared<CountingDataset>(400), o);
  std::vector<Batch> kept;
  std::vector<at::Tensor> kept_tensors;
  for (Batch& b : loader) {
    kept.push_back(b);
    kept_tensors.push_back(b["x"]);
  }
  REQUIRE(kept.size() == 50);
  for (size_t k = 0; k < kept.size(); ++k) {
    for (size_t i = 0; i < kept[k].size(); ++i) {
      REQUIRE(kept[k]["label"][i].item<int64_t>() == static_cast<int64_t>(k * 8 + i));
      REQUIRE(kept_tensors[k][i][0].item<float>() == static_cast<float>(k * 8 + i));
    }
  }
  kept.clear();
  // Tensors alone keep their memory valid, even after the loader is gone.
  std::vector<at::Tensor> survivors = kept_tensors;
  kept_tensors.clear();
  CHECK(survivors[49][7][2].item<float>() == 399.0f);
}

TEST_CASE("loader: num_workers 0 never builds a batch in memory a held batch uses",
          "[loader]") {
  // In-process batches reuse the memory of dropped ones (a pool): never of one still held.
  Loader loader(std::make_shared<CountingDataset>(40), options(0, 4));
  loader.next();  // dropped at once: its memory may be reused
  Batch second = *loader.next();
  Batch third = *loader.next();
  CHECK(third["x"].data_ptr() != second["x"].data_ptr());
  Batch fourth = *loader.next();
  CHECK(fourth["x"].data_ptr() != second["x"].data_ptr());
  CHECK(fourth["x"].data_ptr() != third["x"].data_ptr());
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(second["label"][i].item<int64_t>() == 4 + i);
    CHECK(third["x"][i][3].item<float>() == static_cast<float>(8 + i));
    CHECK(fourth["x"][i][0].item<float>() == static_cast<float>(12 + i));
  }
}

TEST_CASE("loader: tensors outlive the loader", "[loader][process]") {
  at::Tensor x;
  {
    Loader loader(std::make_shared<CountingDataset>(20), options(2, 5));
    auto b = loader.next();
    REQUIRE(b);
    x = (*b)["x"];
  }
  CHECK(x[4][0].item<float>() == 4.0f);
}

TEST_CASE("loader: pad collate adds lengths and pads with the value", "[loader][process]") {
  auto o = options(2, 4);
  o.collate = pad_collate(-1);
  Loader loader(std::make_shared<VarLenDataset>(40), o);
  size_t batches = 0;
  for (Batch& b : loader) {
    at::Tensor tokens = b["tokens"];
    at::Tensor lengths = b["tokens_lengths"];
    for (size_t i = 0; i < b.size(); ++i) {
      const int64_t index = b.indices()[i];
      const int64_t len = 1 + index % 7;
      REQUIRE(lengths[i].item<int64_t>() == len);
      REQUIRE(tokens[i][len - 1].item<int64_t>() == index);
      if (len < tokens.size(1)) REQUIRE(tokens[i][len].item<int64_t>() == -1);
    }
    ++batches;
  }
  CHECK(batches == 10);
}

TEST_CASE("loader: a custom collate function runs in the worker", "[loader][process]") {
  auto o = options(2, 5);
  o.collate = function_collate([](const std::vector<Sample>& samples) {
    at::Tensor sum = at::zeros({1}, at::kLong);
    for (const Sample& s : samples) sum += s["label"];
    return TensorDict{{"label_sum", sum}, {"pid", at::scalar_tensor(int64_t{getpid()})}};
  });
  Loader loader(std::make_shared<CountingDataset>(20), o);
  const auto pids = loader.worker_pids();
  int64_t total = 0;
  for (Batch& b : loader) {
    total += b["label_sum"].item<int64_t>();
    CHECK(std::count(pids.begin(), pids.end(), b["pid"].item<int64_t>()) == 1);
  }
  CHECK(total == 190);
}

TEST_CASE("loader: a batch larger than its slot travels in an overflow segment",
          "[loader][process]") {
  auto o = options(2, 16);
  o.max_batch_bytes = 4096;  // a slot holds less than one 16-sample batch of "x" + "label"
  o.collate = pad_collate();
  Loader loader(std::make_shared<VarLenDataset>(2000), o);
  int64_t count = 0;
  for (Batch& b : loader) count += static_cast<int64_t>(b.size());
  CHECK(count == 2000);
}

TEST_CASE("loader: holding every batch never hangs", "[loader][process]") {
  auto o = options(2, 4);
  o.prefetch_factor = 1;
  Loader loader(std::make_shared<CountingDataset>(200), o);
  std::vector<Batch> all;
  while (auto b = loader.next()) all.push_back(std::move(*b));
  REQUIRE(all.size() == 50);
  CHECK(all[37]["label"][3].item<int64_t>() == 151);
}

TEST_CASE("loader: destroying the loader reaps every worker", "[loader][process]") {
  std::vector<int> pids;
  {
    Loader loader(std::make_shared<CountingDataset>(10000), options(3, 10));
    pids = loader.worker_pids();
    auto b = loader.next();  // mid-epoch, with tasks in flight
    REQUIRE(b);
  }
  REQUIRE(pids.size() == 3);
  for (int pid : pids) CHECK(process_gone(pid));
}

TEST_CASE("loader: num_workers 0 has the same API and an empty dataset has no batches",
          "[loader]") {
  Loader loader(std::make_shared<CountingDataset>(25), options(0, 10));
  CHECK(loader.worker_pids().empty());
  auto labels = run_epoch(loader);
  CHECK(labels.size() == 25);
  Loader empty(std::make_shared<CountingDataset>(0), options(2, 10));
  CHECK(run_epoch(empty).empty());
}

namespace {
// Each sample runs ATen ops big enough to use the intra-op pool if one were there.
class HeavyOpsDataset : public mploader::Dataset {
 public:
  size_t size() const override { return 24; }
  Sample get(int64_t index) override {
    at::Tensor m = at::ones({256, 256});
    return {{"v", at::mm(m, m).sum(0) + static_cast<double>(index)}};
  }
};
}  // namespace

TEST_CASE("loader: workers run ATen ops after the parent used its thread pool",
          "[loader][process]") {
  at::Tensor big = at::rand({512, 512});
  at::Tensor warm = at::mm(big, big);  // starts the parent's intra-op threads before fork
  REQUIRE(warm.size(0) == 512);
  auto o = options(2, 4);
  o.timeout = std::chrono::milliseconds(20000);  // a forked, locked pool would hang here
  Loader loader(std::make_shared<HeavyOpsDataset>(), o);
  size_t batches = 0;
  for (Batch& b : loader) {
    CHECK(b["v"][0][0].item<float>() == 65536.0f + static_cast<float>(b.indices()[0]));
    ++batches;
  }
  CHECK(batches == 6);
}

}  // namespace test_loader
