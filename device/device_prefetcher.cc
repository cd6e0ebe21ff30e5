// device/: batches moved to a GPU ahead of the training loop.
//
// DevicePrefetcher and the DeviceCopier behind it: host batches copied to a device on a side
// stream, one batch ahead of the training loop.
#include <mploader/device_prefetcher.h>

#include "core/batch_builder.h"
#include "util/log.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <atomic>
#include <deque>
#include <exception>
#include <utility>

namespace mploader::detail {
namespace {

// Why this process cannot use `device`, or empty.
std::string unusable_because(const c10::Device& device) {
  if (device.is_cpu()) return "";
  if (device.is_cuda()) {
    if (!at::globalContext().hasCUDART()) return "no CUDA device: this libtorch is CPU-only";
    if (!at::hasCUDA()) return "no CUDA device: the driver reports none usable";
    const int count = at::detail::getCUDAHooks().getNumGPUs();
    if (device.has_index() && device.index() >= count) {
      return "no CUDA device " + std::to_string(device.index()) + ": this process sees " +
             std::to_string(count);
    }
    return "";
  }
  if (!c10::impl::hasDeviceGuardImpl(device.type())) {
    return "this libtorch has no support for device type " + c10::DeviceTypeName(device.type());
  }
  return "";
}

}  // namespace

// Owns the side stream, the batch copied ahead, and the host batches whose copies may still
// run. Used by one thread.
class DeviceCopier {
 public:
  explicit DeviceCopier(c10::Device device) : device_(device) {
    fallback_ = unusable_because(device);
    if (!fallback_.empty()) {
      static std::atomic<bool> logged{false};
      if (!logged.exchange(true)) {
        log().info("mploader: DevicePrefetcher: {}; batches stay on the CPU", fallback_);
      }
      device_ = c10::Device(c10::kCPU);
      return;
    }
    if (device_.is_cpu()) return;
    guard_.emplace(device_.type());
    if (!device_.has_index()) device_ = c10::Device(device_.type(), guard_->getDevice().index());
    side_.emplace(guard_->getStreamFromGlobalPool(device_));
  }

  ~DeviceCopier() {
    // A worker reuses a host batch's ring slot as soon as the batch is destroyed: wait for
    // every copy still reading one.
    if (side_) side_->synchronize();
  }

  bool copies() const { return side_.has_value(); }

  // Starts copying `host` to the device on the side stream; returns at once.
  void copy_ahead(Batch host) {
    c10::StreamGuard on_side(*side_);  // device, current stream and allocations: the side's
    TensorDict on_device;
    for (const auto& [name, tensor] : host.tensors()) {
      on_device.set(name, tensor.to(at::TensorOptions().device(device_), /*non_blocking=*/true));
    }
    c10::Event copied(device_.type());
    copied.record(*side_);
    Batch device = BatchBuilder::from_tensors(std::move(on_device), host.indices(), host.epoch(),
                                              host.sequence(), host.worker_id());
    BatchBuilder::copy_texts(host, device);  // text fields stay views of the host's slot
    ahead_.emplace(Ahead{std::move(host), std::move(device), std::move(copied)});
  }

  // The batch copied ahead, made safe to use on the caller's current stream.
  Batch hand_over() {
    Ahead a = std::move(*ahead_);
    ahead_.reset();
    const c10::Stream consumer = guard_->getStream(device_);
    a.copied.block(consumer);  // the caller's later work waits for the copy, the CPU does not
    // The device memory was allocated on the side stream; without this, freeing it after use
    // on the caller's stream would let the next side-stream copy reuse it while the caller's
    // kernels may still read it (what Tensor::record_stream does, device-generically).
    for (const auto& [name, tensor] : a.device.tensors()) {
      guard_->recordDataPtrOnStream(tensor.storage().data_ptr(), consumer);
    }
    // The copy may still be reading the host batch's ring slot: keep the host batch until the
    // copy's event has completed, or a worker could overwrite the slot mid-transfer.
    retiring_.push_back(Retiring{std::move(a.host), std::move(a.copied)});
    return std::move(a.device);
  }

  // Drops the host batches whose copies have completed.
  void release_copied() {
    while (!retiring_.empty() && retiring_.front().copied.query()) retiring_.pop_front();
  }

  const Batch* ahead() const { return ahead_ ? &ahead_->host : nullptr; }
  bool has_ahead() const { return ahead_.has_value(); }

  c10::Device device_;
  std::string fallback_;
  bool epoch_ended_ = false;  // the Loader returned its end; the next next() says so
  std::exception_ptr pending_error_;  // from fetching the batch after the one handed over

 private:
  struct Ahead {
    Batch host;
    Batch device;
    c10::Event copied;
  };
  struct Retiring {
    Batch host;
    c10::Event copied;
  };
  std::optional<c10::impl::VirtualGuardImpl> guard_;
  std::optional<c10::Stream> side_;
  std::optional<Ahead> ahead_;
  std::deque<Retiring> retiring_;
};

}  // namespace mploader::detail

namespace mploader {

DevicePrefetcher::DevicePrefetcher(Loader& loader, c10::Device device)
    : loader_(loader), copier_(std::make_unique<detail::DeviceCopier>(device)) {}

DevicePrefetcher::~DevicePrefetcher() = default;

std::optional<Batch> DevicePrefetcher::next() {
  detail::DeviceCopier& c = *copier_;
  if (!c.copies()) return loader_.next();  // CPU target or fallback: the host batch itself
  c.release_copied();
  if (c.pending_error_) std::rethrow_exception(std::exchange(c.pending_error_, nullptr));
  if (!c.has_ahead()) {
    if (c.epoch_ended_) {
      c.epoch_ended_ = false;
      return std::nullopt;
    }
    std::optional<Batch> first = loader_.next();
    if (!first) return std::nullopt;
    c.copy_ahead(std::move(*first));
  }
  Batch current = c.hand_over();
  // Batch N+1 starts copying now, while the caller trains on batch N. Its error (a skippable
  // WorkerError, say) is raised by the next call, so that batch N is not lost.
  try {
    if (std::optional<Batch> following = loader_.next()) {
      c.copy_ahead(std::move(*following));
    } else {
      c.epoch_ended_ = true;
    }
  } catch (...) {
    c.pending_error_ = std::current_exception();
  }
  return current;
}

std::string DevicePrefetcher::state_dict() const {
  const Batch* ahead = copier_->ahead();
  return ahead ? loader_.state_dict_without(*ahead) : loader_.state_dict();
}

c10::Device DevicePrefetcher::device() const { return copier_->device_; }

const std::string& DevicePrefetcher::fallback_reason() const { return copier_->fallback_; }

}  // namespace mploader
