// The host-to-GPU copy rate of a Loader's batches, from pinned rings against unpinned ones,
// through DevicePrefetcher and through a plain .to(cuda, non_blocking) in the loop. Samples are
// 4 MiB of float, batches 32 MiB, 8 persistent workers; 100 batches are timed after 10, twice
// per row, the GPU synchronised at both ends.
//
//   gpu_copy [batches]
#include <mploader/mploader.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

class FourMiB : public mploader::Dataset {
 public:
  size_t size() const override { return 4096; }
  mploader::Sample get(int64_t index) override {
    return {{"x", at::full({1 << 20}, static_cast<float>(index), at::kFloat)}};
  }
};

// GB/s over `batches` batches.
double copy_rate(bool pin, bool prefetcher, int batches) {
  mploader::LoaderOptions o;
  o.num_workers = 8;
  o.batch_size = 8;
  o.pin_memory = pin;
  o.persistent_workers = true;
  mploader::Loader loader(std::make_shared<FourMiB>(), o);
  mploader::DevicePrefetcher gpu(loader, c10::Device("cuda:0"));
  at::Tensor sink = at::zeros({1}, at::TensorOptions().device(at::kCUDA));
  double bytes = 0;
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      std::optional<mploader::Batch> b = prefetcher ? gpu.next() : loader.next();
      at::Tensor x = (*b)["x"];
      if (!prefetcher) x = x.to(at::kCUDA, /*non_blocking=*/true);
      sink += x.sum();
      bytes += static_cast<double>(x.numel()) * 4;
    }
  };
  take(10);
  bytes = 0;
  at::cuda::getCurrentCUDAStream().synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  take(batches);
  at::cuda::getCurrentCUDAStream().synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return bytes / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);
  const int batches = argc > 1 ? std::atoi(argv[1]) : 100;
  if (batches < 1 || batches > 4000) {
    std::fprintf(stderr, "gpu_copy: batches must be 1 to 4000, not '%s'\n", argv[1]);
    return 2;
  }
  if (!at::hasCUDA()) {
    std::fprintf(stderr, "gpu_copy: this libtorch sees no CUDA device; run it on a GPU machine\n");
    return 2;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (bool prefetcher : {false, true}) {
      for (bool pin : {false, true}) {
        std::printf("%s, pin_memory %-5s: %.2f GB/s\n",
                    prefetcher ? "DevicePrefetcher" : "loop .to(cuda)  ", pin ? "true" : "false",
                    copy_rate(pin, prefetcher, batches));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
