// Datasets that write their samples straight into the batch (Dataset::sample_layout, write,
// write_batch): the same batches as get() gives, with and without workers; the collators that
// need samples still get them; and every way a dataset can write wrongly is a WorkerError that
// names the sample and the field, never a silently wrong batch.
#include "process_memory.h"
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

namespace test_in_place {

using namespace mploader;

namespace {

LoaderOptions options(int64_t workers, int64_t batch) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = batch;
  o.crash_dir = "/tmp/mploader-test-crashes";
  return o;
}

// CountingDataset's samples ("x": float [4] = index, "label": int64 = index), written in place.
// `fault` may replace the write of one index, to misbehave there.
class InPlaceCounting : public Dataset {
 public:
  using Fault = std::function<void(int64_t, SampleWriter&)>;
  explicit InPlaceCounting(size_t n, int64_t bad = -1, Fault fault = nullptr)
      : n_(n), bad_(bad), fault_(std::move(fault)) {}
  size_t size() const override { return n_; }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"x", at::kFloat, {4}}, {"label", at::kLong, {}}};
  }
  void write(int64_t index, SampleWriter& out) override {
    if (index == bad_ && fault_) return fault_(index, out);
    float* x = out.data<float>(0);
    for (int i = 0; i < 4; ++i) x[i] = static_cast<float>(index);
    *out.data<int64_t>("label") = index;
  }

 private:
  size_t n_;
  int64_t bad_;
  Fault fault_;
};

// Only write_batch: write() and get() throw, so a loader that works used write_batch alone,
// and its slot probe read no sample.
class GatherOnly : public InPlaceCounting {
 public:
  using InPlaceCounting::InPlaceCounting;
  Sample get(int64_t) override { throw std::runtime_error("get() must not be called"); }
  void write(int64_t, SampleWriter&) override {
    throw std::runtime_error("write() must not be called");
  }
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override {
    float* x = out.data<float>(0);
    int64_t* label = out.data<int64_t>(1);
    for (size_t r = 0; r < count; ++r) {
      for (int i = 0; i < 4; ++i) x[r * 4 + i] = static_cast<float>(indices[r]);
      label[r] = indices[r];
    }
  }
};

// Every batch of an epoch, concatenated: x and label.
std::pair<at::Tensor, at::Tensor> epoch_of(std::shared_ptr<Dataset> data, LoaderOptions o) {
  Loader loader(std::move(data), o);
  std::vector<at::Tensor> xs, labels;
  for (Batch& b : loader) {
    xs.push_back(b["x"].clone());
    labels.push_back(b["label"].clone());
  }
  return {at::cat(xs), at::cat(labels)};
}

// The WorkerError the first batch raises.
WorkerError first_error(std::shared_ptr<Dataset> data, int64_t workers) {
  Loader loader(std::move(data), options(workers, 8));
  try {
    for (Batch& b : loader) (void)b;
  } catch (const WorkerError& e) {
    return e;
  }
  FAIL("expected a WorkerError");
  throw std::logic_error("unreachable");
}

// An in-memory array dataset as the bench's fmnist is: float [1, 28, 28] images made before the
// fork (shared with the workers), gathered a batch at a time.
class InMemoryImages : public Dataset {
 public:
  explicit InMemoryImages(int64_t n)
      : images_(at::rand({n, 1, 28, 28})), labels_(at::randint(10, {n}, at::kLong)) {}
  size_t size() const override { return static_cast<size_t>(labels_.size(0)); }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"image", at::kFloat, {1, 28, 28}}, {"label", at::kLong, {}}};
  }
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override {
    float* image = out.data<float>(0);
    int64_t* label = out.data<int64_t>(1);
    for (size_t r = 0; r < count; ++r) {
      std::memcpy(image + r * 784, images_.data_ptr<float>() + indices[r] * 784, 784 * 4);
      label[r] = labels_.data_ptr<int64_t>()[indices[r]];
    }
  }
  const at::Tensor& labels() const { return labels_; }

 private:
  at::Tensor images_, labels_;
};

// RssAnon of `pid`, bytes: its anonymous memory (heap, copied-on-write pages), where a leak or
// a per-epoch cache shows. Not VmRSS: that also counts the ring slots' shared pages, and a slot
// first written in epoch 5 would look like growth.
int64_t anonymous_bytes(int pid) { return testing_memory::status_bytes("RssAnon:", pid); }

}  // namespace

TEST_CASE("in place: the batches equal those get() and stacking give", "[in_place][process]") {
  for (int64_t workers : {0, 2}) {
    auto o = options(workers, 7);
    auto [x, label] = epoch_of(std::make_shared<InPlaceCounting>(40), o);
    auto [x_ref, label_ref] = epoch_of(std::make_shared<testing_datasets::CountingDataset>(40), o);
    CHECK(x.equal(x_ref));
    CHECK(label.equal(label_ref));
    CHECK(label.size(0) == 40);
  }
}

TEST_CASE("in place: a gathering write_batch is used, and sizing the slots reads no sample",
          "[in_place][process]") {
  for (int64_t workers : {0, 2}) {
    auto [x, label] = epoch_of(std::make_shared<GatherOnly>(50), options(workers, 8));
    CHECK(label.equal(at::arange(50, at::kLong)));
    CHECK(x.select(1, 3).equal(at::arange(50, at::kFloat)));
  }
}

TEST_CASE("in place: get() comes from write(), for pad_collate and for direct use",
          "[in_place][process]") {
  InPlaceCounting data(10);
  Sample s = data.get(6);
  CHECK(s.names() == std::vector<std::string>{"x", "label"});
  CHECK(s["x"].equal(at::full({4}, 6.0f)));
  CHECK(s["label"].item<int64_t>() == 6);
  auto o = options(2, 5);
  o.collate = pad_collate();  // needs samples: goes through get()
  auto [x, label] = epoch_of(std::make_shared<InPlaceCounting>(10), o);
  CHECK(label.equal(at::arange(10, at::kLong)));
}

TEST_CASE("in place: a layout with get() alone is copied in through the default write()",
          "[in_place][process]") {
  struct Declared : testing_datasets::CountingDataset {
    explicit Declared(size_t n) : CountingDataset(n), layout(layout_of(get(0))) {}
    std::optional<SampleLayout> sample_layout() const override { return layout; }
    SampleLayout layout;
  };
  auto [x, label] = epoch_of(std::make_shared<Declared>(30), options(2, 4));
  CHECK(label.equal(at::arange(30, at::kLong)));
}

TEST_CASE("in place: a field left unwritten fails its sample, naming the field",
          "[in_place][process]") {
  auto skip_label = [](int64_t, SampleWriter& out) { (void)out.data<float>(0); };
  for (int64_t workers : {0, 2}) {
    WorkerError e = first_error(std::make_shared<InPlaceCounting>(16, 3, skip_label), workers);
    CHECK(e.sample_index() == 3);
    CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::write(3) failed") &&
                                          Catch::Contains("without writing field 'label'") &&
                                          Catch::Contains("Long []"));
  }
}

TEST_CASE("in place: a wrong dtype or shape is refused before any byte is written",
          "[in_place][process]") {
  auto wrong_type = [](int64_t, SampleWriter& out) { (void)out.data<uint8_t>("x"); };
  WorkerError e = first_error(std::make_shared<InPlaceCounting>(16, 5, wrong_type), 2);
  CHECK(e.sample_index() == 5);
  CHECK_THAT(e.original_message(), Catch::Contains("field 'x' (Float [4]) was asked for as Byte"));

  auto wrong_shape = [](int64_t, SampleWriter& out) { out.copy("x", at::zeros({5})); };
  e = first_error(std::make_shared<InPlaceCounting>(16, 2, wrong_shape), 0);
  CHECK(e.sample_index() == 2);
  CHECK_THAT(e.original_message(),
             Catch::Contains("cannot write Float [5] into field 'x' (Float [4])"));

  auto unknown = [](int64_t, SampleWriter& out) { (void)out.data<float>("image"); };
  e = first_error(std::make_shared<InPlaceCounting>(16, 9, unknown), 2);
  CHECK_THAT(e.original_message(),
             Catch::Contains("no field 'image'") && Catch::Contains("declares 'x', 'label'"));
}

TEST_CASE("in place: an exception in write() names the sample, as from get()",
          "[in_place][process]") {
  auto throws = [](int64_t, SampleWriter&) { throw std::runtime_error("corrupt record"); };
  WorkerError e = first_error(std::make_shared<InPlaceCounting>(16, 4, throws), 2);
  CHECK(e.sample_index() == 4);
  CHECK(e.worker_id() >= 0);
  CHECK(e.exception_type() == "std::runtime_error");
  CHECK(e.original_message() == "corrupt record");
  CHECK_THAT(std::string(e.what()), Catch::Contains("batch 0 of epoch 0"));
}

TEST_CASE("in place: a write_batch that skips a field fails the whole batch",
          "[in_place][process]") {
  struct Forgetful : GatherOnly {
    using GatherOnly::GatherOnly;
    void write_batch(const int64_t*, size_t, BatchWriter& out) override {
      (void)out.bytes(0);
    }
  };
  for (int64_t workers : {0, 2}) {
    WorkerError e = first_error(std::make_shared<Forgetful>(16), workers);
    CHECK(e.sample_index() == -1);
    CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::write_batch failed") &&
                                          Catch::Contains("batch field 'label'"));
  }
}

TEST_CASE("in place: an unusable sample layout is an error naming the fix",
          "[in_place][process]") {
  struct Twice : InPlaceCounting {
    using InPlaceCounting::InPlaceCounting;
    std::optional<SampleLayout> sample_layout() const override {
      return SampleLayout{{"x", at::kFloat, {4}}, {"x", at::kLong, {}}};
    }
  };
  for (int64_t workers : {0, 2}) {
    try {
      Loader loader(std::make_shared<Twice>(16), options(workers, 4));
      (void)loader.next();
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::sample_layout() is not usable") &&
                                            Catch::Contains("declares field 'x' twice"));
    }
  }
}

TEST_CASE("in place: a dataset with a layout and neither get() nor write() says so",
          "[in_place]") {
  struct Neither : Dataset {
    size_t size() const override { return 4; }
    std::optional<SampleLayout> sample_layout() const override {
      return SampleLayout{{"x", at::kFloat, {4}}};
    }
  };
  Neither data;
  CHECK_THROWS_WITH(data.get(0), Catch::Contains("implements neither get() nor write()"));
}

TEST_CASE("in place: a crash inside write() is reported in Dataset::write", "[in_place][process]") {
  auto segv = [](int64_t, SampleWriter&) { raise(SIGSEGV); };
  Loader loader(std::make_shared<InPlaceCounting>(16, 6, segv), options(1, 4));
  try {
    for (Batch& b : loader) (void)b;
    FAIL("expected WorkerCrashed");
  } catch (const WorkerCrashed& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::write(6)"));
  }
}

TEST_CASE("in place: persistent workers' memory stays flat over 20 epochs", "[in_place][process]") {
  auto data = std::make_shared<InMemoryImages>(20000);
  auto o = options(2, 256);
  o.persistent_workers = true;
  o.shuffle = true;
  Loader loader(data, o);
  std::vector<int64_t> after_first;
  const int64_t label_sum = data->labels().sum().item<int64_t>();
  for (int epoch = 0; epoch < 20; ++epoch) {
    int64_t sum = 0;
    for (Batch& b : loader) sum += b["label"].sum().item<int64_t>();
    CHECK(sum == label_sum);  // every sample once, in place
    if (epoch == 0) {
      for (int pid : loader.worker_pids()) after_first.push_back(anonymous_bytes(pid));
    }
  }
  const std::vector<int> pids = loader.worker_pids();
  for (size_t w = 0; w < pids.size(); ++w) {
    const int64_t now = anonymous_bytes(pids[w]);
    INFO("worker " << w << ": RssAnon " << after_first[w] << " after epoch 1, " << now
                   << " after epoch 20");
    CHECK(after_first[w] > 0);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // A sanitizer's allocator keeps freed blocks in quarantine: growth, but not the dataset's.
    CHECK(now - after_first[w] < (8 << 20));
#else
    CHECK(std::abs(now - after_first[w]) <= after_first[w] / 100);  // within 1 %
#endif
  }
}

}  // namespace test_in_place
