// The io workload: every sample waits on a real blocking read with latency before it is
// written, as a read from network storage or a slow disk does. The read is on a timerfd armed
// for the latency: the worker sleeps in read(2), off the CPU, exactly as long as a device would
// keep it, and the machine's other work runs meanwhile. With little work per sample besides,
// the best num_workers exceeds the CPUs: the case the tuner must not cap at the CPU budget.
//
// With a CPU time, each sample also spins that long on its thread's CPU clock after the read:
// the decoding a real read is followed by.
//
// Samples: "image" uint8 [3, 32, 32] (every byte index % 256), "label" int64 index % 10.
// C++ loaders only: PyTorch's rows skip it.
#pragma once

#include <mploader/dataset.h>

#include <chrono>
#include <cstdint>

namespace bench {

class IoLatencyDataset : public mploader::Dataset {
 public:
  IoLatencyDataset(size_t size, std::chrono::microseconds latency,
                   std::chrono::microseconds cpu = std::chrono::microseconds(0));
  size_t size() const override { return size_; }
  mploader::Sample get(int64_t index) override;
  std::optional<mploader::SampleLayout> sample_layout() const override;
  void write(int64_t index, mploader::SampleWriter& out) override;
  // "bench-io": "<size> <latency us> <cpu us>", for --start spawn and forkserver.
  std::optional<mploader::DatasetRecipe> recipe() const override;

 private:
  // Blocks in read(2) on the calling thread's timerfd for the latency, then spins for the
  // CPU time.
  void wait_for_read(int64_t index);

  size_t size_;
  std::chrono::microseconds latency_;
  std::chrono::microseconds cpu_;
};

}  // namespace bench
