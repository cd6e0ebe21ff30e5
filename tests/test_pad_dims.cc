// pad_collate(PadOptions): images padded in every dimension, with their sizes, checked value by
// value on their own, through a Loader (2 workers and num_workers = 0) and through spawn (the
// recipe); the old first-dimension padding unchanged; nested names and TensorDict::prefixed().
#include "error_text.h"
#include "core/recipes.h"
#include "test_datasets.h"

#include <mploader/registry.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

namespace test_pad_dims {

using namespace mploader;

using testing_errors::error_of;
using testing_errors::option_error;

namespace {

// Sample i: "image", float [2, H, W] with H = 1 + i % 3 and W = 2 + 2i % 5, whose element
// [c, h, w] is 1000 i + 100 c + 10 h + w; and "label", int64 scalar i.
int64_t height_of(int64_t i) { return 1 + i % 3; }
int64_t width_of(int64_t i) { return 2 + (2 * i) % 5; }
float pixel(int64_t i, int64_t c, int64_t h, int64_t w) {
  return static_cast<float>(1000 * i + 100 * c + 10 * h + w);
}

class ImageSizesDataset : public Dataset {
 public:
  explicit ImageSizesDataset(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"pad_dims_images", std::to_string(n_)};
  }
  Sample get(int64_t i) override {
    at::Tensor image = at::empty({2, height_of(i), width_of(i)}, at::kFloat);
    auto a = image.accessor<float, 3>();
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t h = 0; h < height_of(i); ++h) {
        for (int64_t w = 0; w < width_of(i); ++w) a[c][h][w] = pixel(i, c, h, w);
      }
    }
    return {{"image", image}, {"label", at::scalar_tensor(i, at::kLong)}};
  }

 private:
  size_t n_;
};

MPLOADER_REGISTER_DATASET("pad_dims_images", [](const std::string& config) {
  return std::make_shared<ImageSizesDataset>(std::stoul(config));
});

// Rounds n up to a multiple of m.
int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Checks every element of a batch of ImageSizesDataset padded with `o` (dims kAll): the
// original pixels where the image was, the pad value elsewhere, the sizes tensor, the labels.
void check_image_batch(const Batch& b, const PadOptions& o) {
  const std::string sizes_name = "image" + o.sizes_suffix;
  REQUIRE(b.tensors().names() == std::vector<std::string>{"image", sizes_name, "label"});
  int64_t tallest = 0, widest = 0;
  for (int64_t i : b.indices()) {
    tallest = std::max(tallest, height_of(i));
    widest = std::max(widest, width_of(i));
  }
  const at::Tensor& image = b["image"];
  const auto rows = static_cast<int64_t>(b.size());
  REQUIRE(image.sizes() == at::IntArrayRef({rows, round_up(2, o.pad_to_multiple_of),
                                            round_up(tallest, o.pad_to_multiple_of),
                                            round_up(widest, o.pad_to_multiple_of)}));
  REQUIRE(b[sizes_name].scalar_type() == at::kLong);
  REQUIRE(b[sizes_name].sizes() == at::IntArrayRef({rows, 3}));
  auto px = image.accessor<float, 4>();
  auto sizes = b[sizes_name].accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = b.indices()[static_cast<size_t>(r)];
    CHECK(b["label"][r].item<int64_t>() == i);
    CHECK((sizes[r][0] == 2 && sizes[r][1] == height_of(i) && sizes[r][2] == width_of(i)));
    for (int64_t c = 0; c < image.size(1); ++c) {
      for (int64_t h = 0; h < image.size(2); ++h) {
        for (int64_t w = 0; w < image.size(3); ++w) {
          const float v = px[r][c][h][w];
          if (c < 2 && h < height_of(i) && w < width_of(i)) {
            REQUIRE(v == pixel(i, c, h, w));
          } else if (std::isnan(o.pad_value)) {
            REQUIRE(std::isnan(v));
          } else {
            REQUIRE(v == static_cast<float>(o.pad_value));
          }
        }
      }
    }
  }
}

PadOptions image_padding() {
  PadOptions o;
  o.pad_value = -1;
  o.dims = PadDims::kAll;
  return o;
}

// Reads a whole epoch of 23 images in batches of 4 and checks every batch; returns the count.
size_t check_epoch(LoaderOptions lo, const PadOptions& o) {
  lo.batch_size = 4;
  lo.shuffle = true;
  lo.collate = pad_collate(o);
  Loader loader(std::make_shared<ImageSizesDataset>(23), lo);
  size_t samples = 0;
  while (auto b = loader.next()) {
    check_image_batch(*b, o);
    samples += b->size();
  }
  return samples;
}

// Allocates the batch tensors a worker would map from its slot, then fills them.
std::vector<at::Tensor> collate(Collator& c, const std::vector<Sample>& samples) {
  std::vector<at::Tensor> out;
  for (const TensorLayout& t : c.layout(samples)) {
    out.push_back(at::full(t.shape, 7, at::TensorOptions().dtype(t.dtype)));
  }
  c.fill(samples, out);
  return out;
}

std::vector<std::string> names_of(const std::vector<TensorLayout>& layout) {
  std::vector<std::string> out;
  for (const TensorLayout& t : layout) out.push_back(t.name);
  return out;
}

}  // namespace

TEST_CASE("pad dims: images of different H and W, on their own", "[collate][pad]") {
  ImageSizesDataset data(4);
  std::vector<Sample> samples;
  for (int64_t i = 0; i < 4; ++i) samples.push_back(data.get(i));  // H 1,2,3,1; W 2,4,6,3
  auto out = collate(*pad_collate(image_padding()), samples);
  REQUIRE(out.size() == 3);
  CHECK(out[0].sizes() == at::IntArrayRef({4, 2, 3, 6}));
  CHECK(at::equal(out[1], at::tensor({2, 1, 2, 2, 2, 4, 2, 3, 6, 2, 1, 3}, at::kLong)
                              .reshape({4, 3})));
  for (int64_t i = 0; i < 4; ++i) {
    const at::Tensor row = out[0][i];
    const at::Tensor& image = samples[static_cast<size_t>(i)]["image"];
    CHECK(at::equal(row.narrow(1, 0, height_of(i)).narrow(2, 0, width_of(i)), image));
    // Every element outside the image is the pad value: the sum of the padding counts them.
    const int64_t padding = 2 * 3 * 6 - image.numel();
    CHECK(row.eq(-1).sum().item<int64_t>() == padding);
  }
}

TEST_CASE("pad dims: the layout follows the options, not whether a batch varies",
          "[collate][pad]") {
  const std::vector<Sample> equal{{{"x", at::ones({2, 3})}, {"y", at::zeros({5})}},
                                  {{"x", at::ones({2, 3})}, {"y", at::zeros({5})}}};
  auto all = pad_collate(image_padding());
  const auto layout = all->layout(equal);
  CHECK(names_of(layout) == std::vector<std::string>{"x", "x_sizes", "y", "y_sizes"});
  CHECK(layout[1].shape == std::vector<int64_t>{2, 2});
  CHECK(layout[3].shape == std::vector<int64_t>{2, 1});
  const auto first = pad_collate(PadOptions())->layout(equal);
  CHECK(names_of(first) == std::vector<std::string>{"x", "x_lengths", "y", "y_lengths"});
  CHECK(first[1].shape == std::vector<int64_t>{2});

  PadOptions multiple = image_padding();
  multiple.pad_to_multiple_of = 4;
  CHECK(pad_collate(multiple)->layout(equal)[0].shape == std::vector<int64_t>{2, 4, 4});
  PadOptions sequences;
  sequences.pad_to_multiple_of = 8;  // kFirst: only the first dimension is rounded
  CHECK(pad_collate(sequences)->layout(equal)[0].shape == std::vector<int64_t>{2, 8, 3});
}

TEST_CASE("pad dims: the old pad_collate(value, suffix) is unchanged", "[collate][pad]") {
  auto old = pad_collate(-1, "_len");
  CHECK(*old->recipe() == "pad -1 _len");
  CHECK(*pad_collate()->recipe() == "pad 0 _lengths");
  const std::vector<Sample> samples{{{"t", at::arange(2, at::kLong)}, {"s", at::scalar_tensor(3)}},
                                    {{"t", at::arange(4, at::kLong)}, {"s", at::scalar_tensor(4)}}};
  const auto layout = old->layout(samples);
  CHECK(names_of(layout) == std::vector<std::string>{"t", "t_len", "s"});
  const auto out = collate(*old, samples);
  CHECK(at::equal(out[0], at::tensor({0, 1, -1, -1, 0, 1, 2, 3}, at::kLong).reshape({2, 4})));
  CHECK(at::equal(out[1], at::tensor({2, 4}, at::kLong)));
  CHECK(at::equal(out[2], at::tensor({3.0f, 4.0f})));
  CHECK_THAT(error_of([&] {
               old->layout({{{"t", at::zeros({2, 3})}}, {{"t", at::zeros({2, 4})}}});
             }),
             Catch::Contains("cannot pad 't': sample 1 has shape [2, 4] but sample 0 has [2, 3]; "
                             "only the first dimension may differ") &&
                 Catch::Contains("PadDims::kAll"));
}

TEST_CASE("pad dims: recipes come back as the same options", "[collate][pad][spawn]") {
  PadOptions o = image_padding();
  o.pad_value = std::nan("");
  o.sizes_suffix = " sizes of";  // spaces survive
  o.lengths_suffix = "_len gth";
  o.pad_to_multiple_of = 8;
  const std::string text = *pad_collate(o)->recipe();
  CHECK(text == "pad nan _len gth\ndims all\nsizes  sizes of\nmultiple 8");
  auto rebuilt = mploader::detail::collator_from_recipe(text);
  CHECK(*rebuilt->recipe() == text);
  const std::vector<Sample> samples{{{"x", at::ones({1, 2})}}, {{"x", at::ones({3, 1})}}};
  CHECK(names_of(rebuilt->layout(samples)) == std::vector<std::string>{"x", "x sizes of"});
  CHECK(rebuilt->layout(samples)[0].shape == std::vector<int64_t>{2, 8, 8});
  // The old texts read as before, infinities included (operator>> could not read them).
  const std::string old_text = "pad -3.5 _lengths";
  CHECK(*mploader::detail::collator_from_recipe(old_text)->recipe() == old_text);
  CHECK(*mploader::detail::collator_from_recipe("pad -inf _l")->recipe() == "pad -inf _l");
  CHECK_THROWS_WITH(mploader::detail::collator_from_recipe("pad 1 _l\ncolour red"),
                    Catch::Contains("unknown line 'colour red'"));
  CHECK_THROWS_WITH(mploader::detail::collator_from_recipe("pad one _l"),
                    Catch::Contains("'one' is not a number"));
}

TEST_CASE("pad dims: different ranks or dtypes name the tensor and both samples",
          "[collate][pad]") {
  for (PadDims dims : {PadDims::kFirst, PadDims::kAll}) {
    PadOptions o;
    o.dims = dims;
    auto pad = pad_collate(o);
    const std::vector<Sample> ranks{{{"x", at::zeros({2, 3})}},
                                    {{"x", at::zeros({2, 3})}},
                                    {{"x", at::zeros({4})}}};
    CHECK_THAT(error_of([&] { pad->layout(ranks); }),
               Catch::Contains("cannot pad 'x': sample 2 has shape [4] but sample 0 has [2, 3]; "
                               "every sample's tensor must have the same number of dimensions"));
    const std::vector<Sample> scalars{{{"s", at::scalar_tensor(1)}}, {{"s", at::zeros({1})}}};
    CHECK_THAT(error_of([&] { pad->layout(scalars); }),
               Catch::Contains("sample 1 has shape [1] but sample 0 has []"));
    const std::vector<Sample> dtypes{{{"x", at::zeros({2}, at::kFloat)}},
                                     {{"x", at::zeros({3}, at::kInt)}}};
    CHECK_THAT(error_of([&] { pad->layout(dtypes); }),
               Catch::Contains("cannot pad 'x': sample 1 has dtype Int but sample 0 has Float"));
  }
}

TEST_CASE("pad dims: a rank mismatch in a worker names samples by dataset index",
          "[collate][pad][process]") {
  class MixedRanks : public ImageSizesDataset {
   public:
    using ImageSizesDataset::ImageSizesDataset;
    Sample get(int64_t i) override {
      if (i != 6) return ImageSizesDataset::get(i);
      return {{"image", at::zeros({5})}, {"label", at::scalar_tensor(i, at::kLong)}};
    }
  };
  for (size_t workers : {0, 2}) {
    LoaderOptions lo;
    lo.num_workers = workers;
    lo.batch_size = 4;
    lo.collate = pad_collate(image_padding());
    Loader loader(std::make_shared<MixedRanks>(8), lo);
    CHECK(loader.next());  // samples 0 to 3
    try {
      loader.next();
      FAIL("expected WorkerError");
    } catch (const WorkerError& e) {
      CHECK(e.sample_index() == 6);
      CHECK_THAT(e.original_message(),
                 Catch::Contains("cannot pad 'image': sample 6 has shape [5] but sample 4 has "
                                 "[2, 2, 5]"));
    }
  }
}

TEST_CASE("pad dims: bad options are OptionErrors naming the field", "[collate][pad]") {
  auto option_error = [](const PadOptions& o) {
    try {
      pad_collate(o);
    } catch (const OptionError& e) {
      return e.option() + ": " + e.what();
    }
    return std::string("no exception");
  };
  PadOptions o;
  o.pad_to_multiple_of = 0;
  CHECK_THAT(option_error(o), Catch::StartsWith("collate") &&
                                  Catch::Contains("pad_to_multiple_of must be 1 or more, got 0"));
  o = PadOptions();
  o.lengths_suffix = "";
  CHECK_THAT(option_error(o), Catch::Contains("lengths_suffix is empty"));
  o = image_padding();
  o.lengths_suffix = "";  // unused with kAll
  CHECK(option_error(o) == "no exception");
  o.sizes_suffix = "";
  CHECK_THAT(option_error(o), Catch::Contains("sizes_suffix is empty"));
  o.sizes_suffix = "_s\nx";
  CHECK_THAT(option_error(o), Catch::Contains("line break"));
  // A generated name that a sample already uses would hide one of the two tensors.
  const std::vector<Sample> clash{{{"x", at::zeros({2})}, {"x_lengths", at::zeros({2})}}};
  CHECK_THAT(error_of([&] { pad_collate()->layout(clash); }),
             Catch::Contains("'x_lengths'") && Catch::Contains("lengths_suffix"));
}

TEST_CASE("pad dims: a Loader pads images exactly, with 2 workers and with none",
          "[collate][pad][loader][process]") {
  for (size_t workers : {0, 2}) {
    INFO(workers << " workers");
    LoaderOptions lo;
    lo.num_workers = workers;
    CHECK(check_epoch(lo, image_padding()) == 23);
  }
}

TEST_CASE("pad dims: spawned workers rebuild every option from the recipe",
          "[collate][pad][spawn][process]") {
  LoaderOptions lo;
  lo.num_workers = 2;
  lo.start_method = StartMethod::kSpawn;
  PadOptions o = image_padding();
  o.pad_value = std::nan("");
  o.sizes_suffix = "/sizes";
  o.pad_to_multiple_of = 4;
  CHECK(check_epoch(lo, o) == 23);
}

TEST_CASE("pad dims: nested names keep their order, and prefixed() takes a group",
          "[collate][pad]") {
  std::vector<Sample> samples;
  for (int64_t t : {3, 5}) {
    samples.push_back({{"audio/features", at::full({t, 2}, static_cast<double>(t))},
                       {"audio/rate", at::scalar_tensor(16000, at::kLong)},
                       {"text/tokens", at::arange(t, at::kLong)},
                       {"label", at::scalar_tensor(t, at::kLong)}});
  }
  auto pad = pad_collate();
  const auto layout = pad->layout(samples);
  const std::vector<std::string> names{"audio/features", "audio/features_lengths", "audio/rate",
                                       "text/tokens",    "text/tokens_lengths",    "label"};
  REQUIRE(names_of(layout) == names);
  const auto out = collate(*pad, samples);
  TensorDict batch;
  for (size_t k = 0; k < names.size(); ++k) batch.set(names[k], out[k]);

  const TensorDict audio = batch.prefixed("audio");
  CHECK(audio.names() == std::vector<std::string>{"features", "features_lengths", "rate"});
  CHECK(audio["features"].data_ptr() == batch["audio/features"].data_ptr());  // shared
  CHECK(at::equal(audio["features_lengths"], at::tensor({3, 5}, at::kLong)));
  CHECK(batch.prefixed("audio/").names() == audio.names());
  CHECK(batch.prefixed("text").names() ==
        std::vector<std::string>{"tokens", "tokens_lengths"});
  CHECK(batch.prefixed("aud").empty());
  CHECK(batch.prefixed("label").empty());

  const TensorDict deep{{"a/b/c", at::zeros({1})}, {"a/d", at::ones({1})}, {"ab/c", at::ones({1})}};
  CHECK(deep.prefixed("a").names() == std::vector<std::string>{"b/c", "d"});
  CHECK(deep.prefixed("a").prefixed("b").names() == std::vector<std::string>{"c"});
  CHECK(deep.prefixed("a/b").names() == std::vector<std::string>{"c"});

  Sample utterance{{"audio/features", at::zeros({2})}};  // text fields group the same way
  utterance.set_text("audio/id", "spk03-utt0017");
  utterance.set_text("transcript", "hello");
  const TensorDict group = utterance.prefixed("audio");
  CHECK(group.names() == std::vector<std::string>{"features"});
  REQUIRE(group.texts().size() == 1);
  CHECK(group.text("id") == "spk03-utt0017");
}

TEST_CASE("pad dims: the estimate covers a batch of first-sample-sized images",
          "[collate][pad]") {
  PadOptions o = image_padding();
  o.pad_to_multiple_of = 4;
  auto pad = pad_collate(o);
  const Sample sample{{"image", at::zeros({3, 5, 7})}, {"label", at::scalar_tensor(1)}};
  const std::vector<Sample> batch(8, sample);
  size_t needed = 0;
  for (const TensorLayout& t : pad->layout(batch)) {
    size_t n = c10::elementSize(t.dtype);
    for (int64_t d : t.shape) n *= static_cast<size_t>(d);
    needed += n;
  }
  CHECK(*pad->estimate_batch_bytes(sample, 8) >= needed);
  // The old estimate is kept for the old options: 2 x bytes x batch + 128 per tensor, and 8 per
  // length.
  CHECK(*pad_collate()->estimate_batch_bytes(sample, 8) ==
        (2 * 105 * 4 * 8 + 128) + (2 * 4 * 8 + 128) + 8 * 8 * 2);
}

}  // namespace test_pad_dims
