// example.sines: noisy sine waves to classify by frequency, a stand-in for a dataset of your
// own. Each sample depends on its index alone, so every loader and worker count loads the same
// data. Registered for mploader-bench --dataset-lib (see CMakeLists.txt):
//
//   --dataset example.sines --dataset-config "size=20000 length=2048 classes=10"
#include <mploader/dataset.h>
#include <mploader/registry.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

struct SinesConfig {
  int64_t size = 20000;   // samples
  int64_t length = 2048;  // points per signal
  int64_t classes = 10;   // frequencies
};

const char* const kExample = "e.g. --dataset-config \"size=20000 length=2048 classes=10\"";

// "key=value" words; every key is optional, and an unknown one is an error, not ignored.
SinesConfig parse_config(const std::string& text) {
  SinesConfig c;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    const size_t eq = word.find('=');
    const std::string key = word.substr(0, eq);
    int64_t* field = key == "size" ? &c.size : key == "length" ? &c.length
                     : key == "classes" ? &c.classes : nullptr;
    if (field == nullptr || eq == std::string::npos) {
      throw std::invalid_argument("example.sines: '" + word + "' is not size=N, length=N or "
                                  "classes=N; " + kExample);
    }
    const std::string value = word.substr(eq + 1);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || value.empty() || n < 1 || n > (int64_t{1} << 24)) {
      throw std::invalid_argument("example.sines: " + key + "='" + value + "' is not a whole "
                                  "number from 1 to 16777216; " + kExample);
    }
    *field = n;
  }
  return c;
}

// A well-mixed 64-bit hash (splitmix64): the sample's phase and noise come from its index.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Sines : public mploader::Dataset {
 public:
  explicit Sines(std::string config) : text_(std::move(config)), c_(parse_config(text_)) {}

  size_t size() const override { return static_cast<size_t>(c_.size); }

  // "signal": float32 [1, length]; "label": int64, the frequency's class. Written in place.
  std::optional<mploader::SampleLayout> sample_layout() const override {
    return mploader::SampleLayout{{"signal", at::kFloat, {1, c_.length}},
                                  {"label", at::kLong, {}}};
  }

  void write(int64_t index, mploader::SampleWriter& out) override {
    if (index < 0 || index >= c_.size) {
      throw std::out_of_range("example.sines: index " + std::to_string(index) +
                              " is outside [0, " + std::to_string(c_.size) + ")");
    }
    const int64_t label = index % c_.classes;
    const double cycles = 2.0 + 3.0 * static_cast<double>(label);  // over the whole signal
    uint64_t state = mix(static_cast<uint64_t>(index));
    const double phase = static_cast<double>(state >> 11) * 0x1p-53 * 2 * M_PI;
    float* signal = out.data<float>(0);
    for (int64_t t = 0; t < c_.length; ++t) {
      state = mix(state);
      const double noise = (static_cast<double>(state >> 11) * 0x1p-53 - 0.5) * 0.5;
      const double x = 2 * M_PI * cycles * static_cast<double>(t) / c_.length + phase;
      signal[t] = static_cast<float>(std::sin(x) + noise);
    }
    *out.data<int64_t>(1) = label;
  }

  // --start spawn and forkserver rebuild it from the same text.
  std::optional<mploader::DatasetRecipe> recipe() const override {
    return mploader::DatasetRecipe{"example.sines", text_};
  }

 private:
  std::string text_;
  SinesConfig c_;
};

}  // namespace

MPLOADER_REGISTER_DATASET("example.sines", [](const std::string& config) {
  return std::make_shared<Sines>(config);
});
