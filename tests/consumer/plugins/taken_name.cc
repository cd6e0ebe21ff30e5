// A dataset registered under "bench-synthetic", which mploader-bench registers itself. Its
// write() reads the loading context, a thread-local variable: linking that into a shared
// object needs the static mploader to be position-independent.
#include <mploader/dataset.h>
#include <mploader/registry.h>

#include <memory>

namespace {

class EpochTag : public mploader::Dataset {
 public:
  size_t size() const override { return 64; }
  std::optional<mploader::SampleLayout> sample_layout() const override {
    return mploader::SampleLayout{{"epoch", at::kLong, {}}};
  }
  void write(int64_t, mploader::SampleWriter& out) override {
    const std::optional<mploader::LoadingContext> context = mploader::loading_context();
    *out.data<int64_t>(0) = context ? static_cast<int64_t>(context->epoch) : -1;
  }
};

}  // namespace

MPLOADER_REGISTER_DATASET("bench-synthetic", [](const std::string&) {
  return std::make_shared<EpochTag>();
});
