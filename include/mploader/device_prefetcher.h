// DevicePrefetcher: a Loader's batches, already on a device. While the training loop works on
// batch N, batch N+1 is copied host-to-device on a side stream (non_blocking; straight from the
// ring when LoaderOptions::pin_memory pinned it); next() makes the caller's current stream wait
// for that copy before handing the batch over, so the CPU never waits for a copy.
//
//   mploader::DevicePrefetcher gpu(loader, c10::Device("cuda:0"));
//   while (std::optional<mploader::Batch> b = gpu.next()) { model.forward((*b)["image"]); }
//
// A CPU device passes the host batches through unchanged. A device this process cannot use (no
// GPU, a CPU-only libtorch) falls back to passing through, with one log line; device() then
// says kCPU and fallback_reason() why.
//
// Uses only device-generic c10 APIs (streams, events, guards), so it builds against a CPU-only
// libtorch. Used from one thread, the one that uses the Loader. It holds the Loader by
// reference: the Loader must outlive it.
#pragma once

#include <mploader/batch.h>
#include <mploader/loader.h>

#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>

namespace mploader {

namespace detail {
class DeviceCopier;
}

/// A Loader's batches on a device, batch N+1 copied on a side stream while batch N trains
/// (see the top of this file). Used from the Loader's thread; the Loader must outlive it.
class DevicePrefetcher {
 public:
  /// Copies `loader`'s batches to `device`; a device this process cannot use falls back to
  /// passing host batches through, with one log line.
  DevicePrefetcher(Loader& loader, c10::Device device);
  /// Waits for copies still in flight, so their host batches go back to the workers intact.
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  /// The next batch of the Loader's epoch, on device(); nullopt at the end of an epoch (the
  /// next call starts the next epoch, as Loader::next() does). Throws what Loader::next()
  /// throws.
  std::optional<Batch> next();
  /// The Loader's state_dict(), less the batch copied ahead but not yet returned by next(), so
  /// that a resume issues it again.
  std::string state_dict() const;

  /// Where batches go: the device asked for, or kCPU after a fallback.
  c10::Device device() const;
  /// Why the device asked for is not used; empty when it is.
  const std::string& fallback_reason() const;

 private:
  Loader& loader_;
  std::unique_ptr<detail::DeviceCopier> copier_;
};

}  // namespace mploader
