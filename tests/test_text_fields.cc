// Text fields (Sample::set_text): strings and byte blobs next to tensors, through the ring to
// Batch::text() string_views, checked byte for byte against what the dataset produced.
#include "core/batch_builder.h"
#include "crash_test_support.h"
#include "stderr_capture.h"
#include "test_datasets.h"

#include <mploader/device_prefetcher.h>
#include <mploader/registry.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <sstream>

namespace test_text_fields {

using namespace mploader;
using testing_datasets::CountingDataset;
using testing_datasets::StderrCapture;

namespace {

// A speech-like sample: what every field of sample `index` holds.
int64_t frames_of(int64_t index) { return 1 + (index * 7) % 11; }

std::string utterance_id(int64_t index) {
  char id[32];
  std::snprintf(id, sizeof id, "spk%02d-utt%04d", static_cast<int>(index % 5),
                static_cast<int>(index));
  return id;
}

// Empty for every sixth sample, non-ASCII UTF-8 for others, of varying length.
std::string transcript_of(int64_t index) {
  if (index % 6 == 0) return "";
  std::string out;
  for (int64_t k = 0; k < index % 4 + 1; ++k) {
    out += index % 2 == 0 ? "grüße, naïve café " : "日本語のテキスト " ;
  }
  return out + std::to_string(index);
}

// Bytes with NULs inside (and at the ends).
std::string raw_of(int64_t index) {
  std::string out(static_cast<size_t>(index % 9), '\0');
  for (size_t k = 1; k < out.size(); k += 2) out[k] = static_cast<char>((index + k) & 0xff);
  return out;
}

// feats: float [frames, 3]; utt_id, transcript and raw as text; label: int64 scalar. Sample
// `big` (if any) has a transcript of `big_bytes` bytes; sample `as_tensor` (if any) has
// utt_id as a tensor instead of text.
class SpeechDataset : public Dataset {
 public:
  explicit SpeechDataset(size_t n, int64_t big = -1, size_t big_bytes = 0, int64_t as_tensor = -1)
      : n_(n), big_(big), big_bytes_(big_bytes), as_tensor_(as_tensor) {}
  size_t size() const override { return n_; }
  Sample get(int64_t index) override {
    Sample s;
    s.set("feats", at::arange(frames_of(index) * 3, at::kFloat).add_(index * 1000).view({-1, 3}));
    if (index == as_tensor_) {
      s.set("utt_id", at::scalar_tensor(index, at::kLong));
    } else {
      s.set_text("utt_id", utterance_id(index));
    }
    s.set_text("transcript", index == big_ ? std::string(big_bytes_, 'a') : transcript_of(index));
    const std::string raw = raw_of(index);
    s.set_bytes("raw", raw.data(), raw.size());
    s.set("label", at::scalar_tensor(index, at::kLong));
    return s;
  }
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"speech", std::to_string(n_) + " " + std::to_string(big_) + " " +
                                       std::to_string(big_bytes_) + " " +
                                       std::to_string(as_tensor_)};
  }

 private:
  size_t n_;
  int64_t big_;
  size_t big_bytes_;
  int64_t as_tensor_;
};

MPLOADER_REGISTER_DATASET("speech", [](const std::string& config) {
  std::istringstream in(config);
  size_t n, big_bytes;
  int64_t big, as_tensor;
  in >> n >> big >> big_bytes >> as_tensor;
  return std::make_shared<SpeechDataset>(n, big, big_bytes, as_tensor);
});

// Every field of every row of `b` is exactly what SpeechDataset produced for its index.
void check_speech_batch(const Batch& b) {
  const TextColumn& ids = b.text("utt_id");
  const TextColumn& transcripts = b.text("transcript");
  const TextColumn& raws = b.text("raw");
  REQUIRE(ids.size() == b.size());
  REQUIRE(transcripts.size() == b.size());
  REQUIRE(raws.size() == b.size());
  REQUIRE(b.texts().size() == 3);
  CHECK(b.texts()[0].first == "utt_id");
  CHECK(b.texts()[2].first == "raw");
  for (size_t i = 0; i < b.size(); ++i) {
    const int64_t index = b.indices()[i];
    INFO("sample " << index);
    REQUIRE(ids[i] == utterance_id(index));
    REQUIRE(transcripts[i] == transcript_of(index));
    REQUIRE(raws[i] == raw_of(index));
    REQUIRE(b["label"][static_cast<int64_t>(i)].item<int64_t>() == index);
    REQUIRE(b["feats_lengths"][static_cast<int64_t>(i)].item<int64_t>() == frames_of(index));
    const at::Tensor expected =
        at::arange(frames_of(index) * 3, at::kFloat).add_(index * 1000).view({-1, 3});
    REQUIRE(at::equal(b["feats"][static_cast<int64_t>(i)].narrow(0, 0, frames_of(index)),
                      expected));
  }
}

LoaderOptions speech_options(int64_t num_workers, StartMethod method) {
  LoaderOptions o;
  o.num_workers = num_workers;
  o.start_method = method;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 7;
  o.collate = pad_collate();
  o.crash_dir = crash_testing::fresh_dir();
  return o;
}

std::string worker_error_text(const std::shared_ptr<Dataset>& data, const LoaderOptions& o) {
  Loader loader(data, o);
  try {
    for (Batch& b : loader) (void)b;
  } catch (const WorkerError& e) {
    return e.what();
  }
  return "";
}

// CountingDataset with an utterance id ("id") as a text field.
class IdDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    Sample s = CountingDataset::get(index);
    s.set_text("id", utterance_id(index));
    return s;
  }
};

}  // namespace

TEST_CASE("text fields: speech samples cross fork, spawn and num_workers = 0 exactly, "
          "every sample of several epochs",
          "[text][process]") {
  const size_t n = 37;  // the last batch has one sample
  const std::pair<int64_t, StartMethod> runs[] = {
      {2, StartMethod::kFork}, {2, StartMethod::kSpawn}, {0, StartMethod::kFork}};
  for (const auto& [workers, method] : runs) {
    INFO("num_workers " << workers << ", start method " << static_cast<int>(method));
    Loader loader(std::make_shared<SpeechDataset>(n), speech_options(workers, method));
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      loader.set_epoch(epoch);
      std::vector<int64_t> seen;
      std::optional<TextColumn> kept;  // outlives its batch: still views the same bytes
      std::vector<std::string> kept_values;
      for (Batch& b : loader) {
        check_speech_batch(b);
        seen.insert(seen.end(), b.indices().begin(), b.indices().end());
        if (!kept) {
          kept = b.text("transcript");
          kept_values = kept->to_strings();
        }
      }
      CHECK(seen == RandomSampler(7).indices(n, epoch));
      REQUIRE(kept);
      CHECK(kept->to_strings() == kept_values);
    }
  }
}

TEST_CASE("text fields: with stack_collate, and resumed in order in a new loader",
          "[text][process]") {
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 5;
  std::string state;
  std::vector<int64_t> seen;
  {
    Loader loader(std::make_shared<IdDataset>(42), o);
    for (int k = 0; k < 3; ++k) {
      std::optional<Batch> b = loader.next();
      REQUIRE(b);
      for (size_t i = 0; i < b->size(); ++i) {
        REQUIRE(b->text("id")[i] == utterance_id(b->indices()[i]));
        REQUIRE(b->tensors()["label"][static_cast<int64_t>(i)].item<int64_t>() ==
                b->indices()[i]);
      }
      seen.insert(seen.end(), b->indices().begin(), b->indices().end());
    }
    state = loader.state_dict();
  }
  Loader resumed(std::make_shared<IdDataset>(42), o);
  resumed.load_state_dict(state);
  for (Batch& b : resumed) {
    for (size_t i = 0; i < b.size(); ++i) REQUIRE(b.text("id")[i] == utterance_id(b.indices()[i]));
    seen.insert(seen.end(), b.indices().begin(), b.indices().end());
  }
  std::vector<int64_t> all(42);
  for (int64_t i = 0; i < 42; ++i) all[static_cast<size_t>(i)] = i;
  CHECK(seen == all);
}

TEST_CASE("text fields: a field that is text in one sample and a tensor in another is named",
          "[text][process]") {
  for (int64_t workers : {0, 2}) {
    INFO("num_workers " << workers);
    auto o = speech_options(workers, StartMethod::kFork);
    o.shuffle = false;
    // Batch 1 holds samples 4..7: sample 5's utt_id is a tensor, sample 4's text.
    std::string text = worker_error_text(std::make_shared<SpeechDataset>(16, -1, 0, 5), o);
    CHECK_THAT(text, Catch::Contains("field 'utt_id' is a text field in sample 4 but a tensor "
                                     "in sample 5"));
    // Sample 4 first in its batch with a tensor, sample 5 with text: the other way round.
    text = worker_error_text(std::make_shared<SpeechDataset>(16, -1, 0, 4), o);
    CHECK_THAT(text, Catch::Contains("field 'utt_id' is a text field in sample 5 but a tensor "
                                     "in sample 4"));
  }
}

TEST_CASE("text fields: stack_collate names a text/tensor mismatch in either order",
          "[text][process]") {
  // Fixed-shape tensors, so that stack_collate gets as far as the text fields.
  class FlipDataset : public CountingDataset {
   public:
    FlipDataset(size_t n, int64_t flipped) : CountingDataset(n), flipped_(flipped) {}
    Sample get(int64_t index) override {
      Sample s = CountingDataset::get(index);
      if (index == flipped_) {
        s.set("id", at::scalar_tensor(index, at::kLong));
      } else {
        s.set_text("id", utterance_id(index));
      }
      return s;
    }

   private:
    int64_t flipped_;
  };
  for (int64_t workers : {0, 2}) {
    INFO("num_workers " << workers);
    LoaderOptions o;
    o.num_workers = workers;
    o.batch_size = 4;
    CHECK_THAT(worker_error_text(std::make_shared<FlipDataset>(12, 6), o),
               Catch::Contains("field 'id' is a text field in sample 4 but a tensor in sample 6"));
    // The batch's first sample has the tensor: the streaming path checks each later row.
    CHECK_THAT(worker_error_text(std::make_shared<FlipDataset>(12, 8), o),
               Catch::Contains("field 'id' is a text field in sample 9 but a tensor in sample 8"));
  }
}

TEST_CASE("text fields: a transcript larger than the slot goes to overflow, or is "
          "BatchTooLarge without it",
          "[text][process]") {
  const size_t big = 1 << 20;  // the slot is sized from sample 0: a few kilobytes
  for (int64_t workers : {0, 2}) {
    INFO("num_workers " << workers);
    auto o = speech_options(workers, StartMethod::kFork);
    o.shuffle = false;
    auto data = std::make_shared<SpeechDataset>(24, 13, big);
    {
      Loader loader(data, o);
      size_t rows = 0;
      for (Batch& b : loader) {
        for (size_t i = 0; i < b.size(); ++i) {
          const int64_t index = b.indices()[i];
          const std::string_view t = b.text("transcript")[i];
          REQUIRE(t == (index == 13 ? std::string(big, 'a') : transcript_of(index)));
          REQUIRE(b.text("utt_id")[i] == utterance_id(index));
          ++rows;
        }
      }
      CHECK(rows == 24);
    }
    if (workers == 0) continue;  // the in-process path has no slots
    o.allow_overflow = false;
    Loader loader(data, o);
    bool too_large = false;
    try {
      for (Batch& b : loader) (void)b;
    } catch (const BatchTooLarge& e) {
      too_large = true;
      CHECK(e.batch_bytes() > big);
      CHECK(e.slot_bytes() < big);
      CHECK_THAT(std::string(e.what()), Catch::Contains(std::to_string(e.batch_bytes())));
    }
    CHECK(too_large);
  }
}

TEST_CASE("text fields: a huge text in sample 0 does not size every slot for it, and overflow "
          "carries it intact",
          "[text][process]") {
  // Sizing slots for two rows of twice this made each of 3 slots 480 MiB; the slots now
  // hold at most 64 MiB of text, and the batch with sample 0 takes an overflow segment.
  const size_t big = size_t{96} << 20;
  const uint64_t most_slot_bytes = (uint64_t{64} << 20) * 5 / 4 + (uint64_t{1} << 20);
  auto data = std::make_shared<SpeechDataset>(6, 0, big);
  auto o = speech_options(1, StartMethod::kFork);
  o.batch_size = 2;
  o.shuffle = false;
  o.allow_overflow = false;
  {
    Loader loader(data, o);
    bool too_large = false;
    try {
      for (Batch& b : loader) (void)b;
    } catch (const BatchTooLarge& e) {
      too_large = true;
      CHECK(e.batch_bytes() > big);
      CHECK(e.slot_bytes() <= most_slot_bytes);
    }
    CHECK(too_large);
  }
  o.allow_overflow = true;
  StderrCapture log;
  size_t rows = 0;
  {
    Loader loader(data, o);
    for (Batch& b : loader) {
      for (size_t i = 0; i < b.size(); ++i) {
        const int64_t index = b.indices()[i];
        const std::string_view t = b.text("transcript")[i];
        REQUIRE(t.size() == (index == 0 ? big : transcript_of(index).size()));
        REQUIRE(t == (index == 0 ? std::string(big, 'a') : transcript_of(index)));
        REQUIRE(b.text("utt_id")[i] == utterance_id(index));
        ++rows;
      }
    }
  }
  const std::string logged = log.text();
  INFO(logged);
  CHECK(rows == 6);
  CHECK_THAT(logged, Catch::Contains("sample 0's text field 'transcript' is 96.0 MiB") &&
                         Catch::Contains("max_batch_bytes"));
  CHECK_THAT(logged, Catch::Contains("larger than a ring slot"));
}

TEST_CASE("text fields: the tensor form is uint8 bytes and int64 offsets", "[text][process]") {
  auto o = speech_options(2, StartMethod::kFork);
  o.shuffle = false;
  Loader loader(std::make_shared<SpeechDataset>(8), o);
  std::optional<Batch> b = loader.next();
  REQUIRE(b);
  const TextColumn& raw = b->text("raw");
  CHECK(raw.bytes().scalar_type() == at::kByte);
  CHECK(raw.offsets().scalar_type() == at::kLong);
  REQUIRE(raw.offsets().sizes() == at::IntArrayRef({5}));
  std::string all;
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(raw.offsets()[i].item<int64_t>() == static_cast<int64_t>(all.size()));
    all += raw_of(i);
  }
  CHECK(raw.offsets()[4].item<int64_t>() == static_cast<int64_t>(all.size()));
  REQUIRE(raw.bytes().numel() == static_cast<int64_t>(all.size()));
  CHECK(std::string(reinterpret_cast<const char*>(raw.bytes().data_ptr<uint8_t>()), all.size()) ==
        all);
  // A tensor taken from the column keeps the memory on its own.
  at::Tensor bytes = raw.bytes();
  b.reset();
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), all.size()) == all);
  // Looking a text field up as a tensor, or the other way round, says which it is.
  std::optional<Batch> next = loader.next();
  REQUIRE(next);
  CHECK_THROWS_WITH((*next)["utt_id"], Catch::Contains("is a text field"));
  CHECK_THROWS_WITH(next->text("label"), Catch::Contains("it is a tensor"));
}

TEST_CASE("text fields: Sample keeps one kind per name, and TextColumn checks its offsets",
          "[text]") {
  Sample s;
  s.set("a", at::zeros({2}));
  s.set_text("a", std::string("x\0y", 3));
  CHECK(s.find("a") == nullptr);
  CHECK(s.text("a") == std::string_view("x\0y", 3));
  CHECK(s.size() == 0);
  CHECK_FALSE(s.empty());
  s.set("a", at::ones({1}));
  CHECK(s.find_text("a") == nullptr);
  CHECK(s.texts().empty());
  CHECK_THROWS_WITH(s.text("a"), Catch::Contains("it is a tensor"));

  const at::Tensor bytes = at::zeros({4}, at::kByte);
  CHECK_THROWS_AS(TextColumn(bytes, at::tensor(std::vector<int64_t>{0, 3, 2, 4})),
                  mploader::OptionError);
  CHECK_THROWS_AS(TextColumn(bytes, at::tensor(std::vector<int64_t>{0, 5})),
                  mploader::OptionError);
  const TextColumn ok(bytes, at::tensor(std::vector<int64_t>{0, 1, 4}));
  CHECK(ok.size() == 2);
  CHECK(ok[1].size() == 3);
  CHECK_THROWS_AS(ok[2], mploader::OptionError);
}

TEST_CASE("text fields: a dataset with sample_layout() cannot return text from get()",
          "[text][process]") {
  class LaidOut : public IdDataset {
   public:
    using IdDataset::IdDataset;
    std::optional<SampleLayout> sample_layout() const override {
      return SampleLayout{{"x", at::kFloat, {4}}, {"label", at::kLong, {}}};
    }
  };
  LoaderOptions o;
  o.batch_size = 2;
  CHECK_THAT(worker_error_text(std::make_shared<LaidOut>(4), o),
             Catch::Contains("carries tensors only"));
}


TEST_CASE("text fields: DevicePrefetcher hands them on as views of host memory",
          "[text][device][process]") {
  auto o = speech_options(2, StartMethod::kFork);
  o.shuffle = false;
  Loader loader(std::make_shared<SpeechDataset>(12), o);
  // On a machine without a GPU this passes host batches through; with one, the tensors move
  // and the text columns come along.
  DevicePrefetcher prefetcher(loader, c10::Device("cuda:0"));
  size_t rows = 0;
  while (std::optional<Batch> b = prefetcher.next()) {
    CHECK((*b)["feats"].device() == prefetcher.device());
    for (size_t i = 0; i < b->size(); ++i) {
      REQUIRE(b->text("transcript")[i] == transcript_of(b->indices()[i]));
      REQUIRE(b->text("raw")[i] == raw_of(b->indices()[i]));
      ++rows;
    }
  }
  CHECK(rows == 12);
}

TEST_CASE("text fields: offsets a worker wrote wrong are refused, not read", "[text]") {
  namespace detail = mploader::detail;
  std::vector<TensorLayout> layout{{"id", at::kLong, {3}}, {"id", at::kByte, {5}}};
  std::vector<ipc::FieldKind> kinds{ipc::FieldKind::kTextOffsets, ipc::FieldKind::kTextBytes};
  detail::PlannedBatch plan;
  REQUIRE(detail::plan_batch(layout, plan, kinds).empty());
  auto descriptor = std::make_unique<ipc::TaskDescriptor>();
  detail::write_tensor_table(plan, *descriptor);
  std::vector<uint8_t> memory(plan.total_bytes);
  auto* offsets = reinterpret_cast<int64_t*>(memory.data() + plan.offsets[0]);
  std::memcpy(memory.data() + plan.offsets[1], "ab\0cd", 5);
  offsets[0] = 0;
  offsets[1] = 3;
  offsets[2] = 5;
  const Batch good = detail::BatchBuilder::from_table(*descriptor, memory.data(), memory.size(),
                                                      nullptr, {7, 8}, 0);
  CHECK(good.text("id")[0] == std::string_view("ab\0", 3));
  CHECK(good.text("id")[1] == "cd");
  offsets[2] = 1 << 20;  // past the bytes, and the mapping
  CHECK_THROWS_WITH(detail::BatchBuilder::from_table(*descriptor, memory.data(), memory.size(),
                                                     nullptr, {7, 8}, 0),
                    Catch::Contains("corrupt tensor table"));
  offsets[2] = 5;
  descriptor->tensors[1].kind = static_cast<uint32_t>(ipc::FieldKind::kTensor);  // half a pair
  CHECK_THROWS_WITH(detail::BatchBuilder::from_table(*descriptor, memory.data(), memory.size(),
                                                     nullptr, {7, 8}, 0),
                    Catch::Contains("corrupt tensor table"));
}

}  // namespace test_text_fields
