// Pinned rings and DevicePrefetcher. Without a GPU (this CI) the fallbacks run for real: the
// CUDA runtime is looked up and asked for devices, the reason is reported, and the batches are
// the same as without the options. Tests that need a GPU say why they skip.
#include "util/cuda_pinning.h"
#include "test_datasets.h"

#include <mploader/device_prefetcher.h>

#include <ATen/Context.h>
#include <catch2/catch.hpp>

namespace test_device {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

LoaderOptions options(int64_t workers, bool pin) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = 8;
  o.pin_memory = pin;
  return o;
}

// Why the GPU tests cannot run here, or empty.
std::string no_gpu_reason() {
  if (!at::globalContext().hasCUDART()) return "this libtorch is CPU-only";
  if (!at::hasCUDA()) return "the driver reports no usable device";
  return "";
}

#define SKIP_WITHOUT_GPU()                               \
  do {                                                   \
    const std::string why = no_gpu_reason();             \
    if (!why.empty()) {                                  \
      WARN("skipped: no CUDA device: " << why);          \
      return;                                            \
    }                                                    \
  } while (0)

// Every batch's labels equal its indices; returns the sequences in delivery order.
std::vector<uint64_t> check_epoch(const std::function<std::optional<Batch>()>& next,
                                  size_t expected_batches) {
  std::vector<uint64_t> sequences;
  while (std::optional<Batch> b = next()) {
    at::Tensor labels = (*b)["label"].cpu();
    for (size_t i = 0; i < b->size(); ++i) REQUIRE(labels[i].item<int64_t>() == b->indices()[i]);
    sequences.push_back(b->sequence());
  }
  REQUIRE(sequences.size() == expected_batches);
  return sequences;
}

class CudaFailingDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    if (index == 5) throw std::runtime_error("CUDA error: initialization error");
    return CountingDataset::get(index);
  }
};

}  // namespace

TEST_CASE("device: pin_memory pins the rings, or says once why not and goes on unpinned",
          "[device][process]") {
  const std::optional<std::string> reason = mploader::detail::cuda::pinning_unavailable_reason();
  Loader loader(std::make_shared<CountingDataset>(100), options(2, true));
  for (int epoch = 0; epoch < 2; ++epoch) {  // workers and rings are new each epoch
    size_t batches = 0;
    for (Batch& b : loader) {
      CHECK(b["x"].is_pinned() == !reason.has_value());
      ++batches;
    }
    CHECK(batches == 13);
  }
  if (reason) {
    INFO(*reason);
    const bool named = reason->find("no CUDA device") != std::string::npos ||
                       reason->find("not installed") != std::string::npos ||
                       reason->find("without CUDA") != std::string::npos;
    CHECK(named);
    CHECK(reason == mploader::detail::cuda::pinning_unavailable_reason());  // decided once
  }
}

TEST_CASE("device: a CPU target passes the batches through, same batches, same order",
          "[device][process]") {
  Loader plain(std::make_shared<CountingDataset>(100), options(2, false));
  std::vector<uint64_t> expected = check_epoch([&] { return plain.next(); }, 13);
  Loader loader(std::make_shared<CountingDataset>(100), options(2, false));
  DevicePrefetcher cpu(loader, c10::Device(c10::kCPU));
  CHECK(cpu.device().is_cpu());
  CHECK(cpu.fallback_reason().empty());
  for (int epoch = 0; epoch < 2; ++epoch) {
    CHECK(check_epoch([&] { return cpu.next(); }, 13) == expected);
  }
}

TEST_CASE("device: a CUDA target without a usable device falls back to the CPU with the reason",
          "[device][process]") {
  if (no_gpu_reason().empty()) {
    WARN("skipped: a CUDA device is present, so there is no fallback to test");
    return;
  }
  Loader loader(std::make_shared<CountingDataset>(50), options(2, true));
  DevicePrefetcher gpu(loader, c10::Device("cuda:0"));
  CHECK(gpu.device().is_cpu());
  CHECK_THAT(gpu.fallback_reason(), Catch::StartsWith("no CUDA device"));
  CHECK(check_epoch([&] { return gpu.next(); }, 7).front() == 0);
}

TEST_CASE("device: a CUDA message from a forked worker's dataset gets the fork hint",
          "[device][process]") {
  Loader loader(std::make_shared<CudaFailingDataset>(40), options(2, false));
  try {
    for (Batch& b : loader) (void)b;
    FAIL("no WorkerError");
  } catch (const WorkerError& e) {
    CHECK_THAT(e.what(), Catch::Contains("a forked worker cannot use CUDA") &&
                             Catch::Contains("spawn or forkserver"));
  }
}

TEST_CASE("device: batches arrive on the GPU equal to the host ones, and a resume leaves out the "
          "one copied ahead",
          "[device][process][gpu]") {
  SKIP_WITHOUT_GPU();
  LoaderOptions o = options(2, true);
  Loader loader(std::make_shared<CountingDataset>(100), o);
  DevicePrefetcher gpu(loader, c10::Device("cuda:0"));
  REQUIRE(gpu.device().is_cuda());
  for (int k = 0; k < 3; ++k) {
    std::optional<Batch> b = gpu.next();
    REQUIRE(b);
    CHECK((*b)["x"].is_cuda());
    CHECK(b->sequence() == static_cast<uint64_t>(k));
  }
  const std::string state = gpu.state_dict();  // batch 3 is on its way to the GPU already
  std::vector<uint64_t> rest = check_epoch([&] { return gpu.next(); }, 10);
  CHECK(rest.front() == 3);
  Loader resumed(std::make_shared<CountingDataset>(100), o);
  resumed.load_state_dict(state);
  CHECK(resumed.next()->sequence() == 3);
}

TEST_CASE("device: forked workers start every epoch after CUDA is initialised",
          "[device][process][gpu]") {
  SKIP_WITHOUT_GPU();
  at::Tensor on_gpu = at::ones({4}, at::TensorOptions().device(at::kCUDA));
  Loader loader(std::make_shared<CountingDataset>(64), options(2, true));
  for (int epoch = 0; epoch < 2; ++epoch) {
    size_t batches = 0;
    for (Batch& b : loader) {
      on_gpu += b["x"].to(at::kCUDA, /*non_blocking=*/true).sum();
      ++batches;
    }
    CHECK(batches == 8);
  }
}

}  // namespace test_device
