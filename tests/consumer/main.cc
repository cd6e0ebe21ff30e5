// An outside program using an mploader it did not build itself (see CMakeLists.txt): a Dataset,
// a Loader with 2 worker processes started by fork and by spawn, every index delivered exactly
// once and every sample intact. Spawn re-executes this program, which proves mploader::init
// works from a package. Prints "consumer ok: ..." and exits 0, else names what went wrong.
#include <mploader/mploader.h>

#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/tensor.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int64_t kSamples = 203;  // not a multiple of the batch size: a short last batch

// "value": int64 [3] = {i, 2i, 3i}.
class Triples : public mploader::Dataset {
 public:
  size_t size() const override { return kSamples; }
  mploader::Sample get(int64_t index) override {
    return {{"value", at::arange(1, 4, at::kLong).mul(index)}};
  }
  std::optional<mploader::DatasetRecipe> recipe() const override { return {{"triples", ""}}; }
};

MPLOADER_REGISTER_DATASET("triples",
                          [](const std::string&) { return std::make_shared<Triples>(); });

// Empty when every index came once with its own sample; else what was wrong.
std::string check(mploader::StartMethod method) {
  mploader::LoaderOptions o;
  o.batch_size = 16;
  o.num_workers = 2;
  o.shuffle = true;
  o.start_method = method;
  o.timeout = std::chrono::seconds(60);
  mploader::Loader loader(std::make_shared<Triples>(), o);
  std::vector<int> seen(kSamples, 0);
  for (mploader::Batch& b : loader) {
    const at::Tensor expected =
        at::arange(1, 4, at::kLong).unsqueeze(0).mul(at::tensor(b.indices()).unsqueeze(1));
    if (!at::equal(b["value"], expected))
      return "batch " + std::to_string(b.sequence()) + " is wrong";
    for (int64_t i : b.indices()) ++seen[i];
  }
  for (int64_t i = 0; i < kSamples; ++i) {
    if (seen[i] != 1)
      return "index " + std::to_string(i) + " came " + std::to_string(seen[i]) + " times";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned worker runs here and never returns
  const std::pair<const char*, mploader::StartMethod> methods[] = {
      {"fork", mploader::StartMethod::kFork}, {"spawn", mploader::StartMethod::kSpawn}};
  for (const auto& [name, method] : methods) {
    try {
      const std::string problem = check(method);
      if (!problem.empty()) {
        std::fprintf(stderr, "consumer: %s: %s\n", name, problem.c_str());
        return 1;
      }
    } catch (const mploader::Error& e) {
      std::fprintf(stderr, "consumer: %s: %s\n", name, e.what());
      return 1;
    }
  }
  std::printf("consumer ok: fork and spawn each delivered all %lld samples once\n",
              static_cast<long long>(kSamples));
  return 0;
}
