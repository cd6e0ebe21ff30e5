// The physical limit: the same number of threads as workers, each writing every byte of its
// batches once (the workload's own in-place fill, Dataset::write_batch: no get(), no copy)
// into preallocated shared-memory slots with the footprint of mploader's rings (prefetch + 1
// slots per worker, the one released last reused first), handed to the calling thread in order
// as mploader hands batches to the training loop. No processes, no descriptors, no collation: what is left is the work itself
// and its memory traffic. Only for workloads that declare a sample layout.
#include "bench/run_config.h"
#include "bench/run_timer.h"

#include <mploader/dataset.h>

#include <ATen/ops/from_blob.h>
#include <sys/mman.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace bench {
namespace {

// One batch's worth of memory per slot: each field's rows back to back, 64-byte aligned.
struct SlotLayout {
  mploader::SampleLayout fields;
  std::vector<size_t> offsets, field_bytes;
  size_t slot_bytes = 0;
};

SlotLayout slot_layout(mploader::SampleLayout fields, int64_t batch_size) {
  SlotLayout s;
  s.fields = std::move(fields);
  for (const mploader::FieldLayout& f : s.fields) {
    s.slot_bytes = (s.slot_bytes + 63) / 64 * 64;
    s.offsets.push_back(s.slot_bytes);
    s.field_bytes.push_back(f.nbytes());
    s.slot_bytes += f.nbytes() * static_cast<size_t>(batch_size);
  }
  s.slot_bytes = (s.slot_bytes + 4095) / 4096 * 4096;
  return s;
}

// Shared anonymous memory, faulted in up front, as mploader's rings are before the first batch.
class SlotMemory {
 public:
  explicit SlotMemory(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("limit: mmap of the slots failed");
    base_ = static_cast<uint8_t*>(p);
    std::memset(base_, 0, bytes);
  }
  ~SlotMemory() { munmap(base_, bytes_); }
  SlotMemory(const SlotMemory&) = delete;
  SlotMemory& operator=(const SlotMemory&) = delete;
  uint8_t* base() const { return base_; }

 private:
  uint8_t* base_;
  size_t bytes_;
};

// Batches written by the producers and taken by the consumer, in order. Producer t writes
// batches t, t + T, ...; each into the free slot of its own that the consumer released last
// (still in cache), as mploader's workers take theirs.
class Handoff {
 public:
  Handoff(int64_t batches, int64_t threads, int64_t ring)
      : slot_of_(static_cast<size_t>(batches), -1), free_(static_cast<size_t>(threads)) {
    for (int64_t t = 0; t < threads; ++t) {
      for (int64_t k = ring - 1; k >= 0; --k) free_[static_cast<size_t>(t)].push_back(t * ring + k);
    }
  }
  // Producer t: a free slot to write into, or -1 once the run failed.
  int64_t acquire(int64_t t) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& mine = free_[static_cast<size_t>(t)];
    cv_.wait(lock, [&] { return !mine.empty() || error_; });
    if (error_) return -1;
    const int64_t slot = mine.back();
    mine.pop_back();
    return slot;
  }
  void publish(int64_t b, int64_t slot) {
    std::lock_guard<std::mutex> lock(mu_);
    slot_of_[static_cast<size_t>(b)] = slot;
    cv_.notify_all();
  }
  // The consumer: the slot batch `b` was written into, once it is.
  int64_t take(int64_t b) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return slot_of_[static_cast<size_t>(b)] >= 0 || error_; });
    if (error_) std::rethrow_exception(error_);
    return slot_of_[static_cast<size_t>(b)];
  }
  void release(int64_t t, int64_t slot) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[static_cast<size_t>(t)].push_back(slot);
    cv_.notify_all();
  }
  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = e;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> slot_of_;           // batch -> its slot, -1 until written
  std::vector<std::vector<int64_t>> free_;  // per producer, most recently released last
  std::exception_ptr error_;
};

}  // namespace

RunResult run_limit(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data) {
  std::optional<mploader::SampleLayout> fields = data->sample_layout();
  if (!fields) {
    throw std::runtime_error("limit: the " + config.workload + " workload does not write in "
                             "place (no sample_layout()), so it has no one-write limit");
  }
  const int64_t per_epoch = static_cast<int64_t>(data->size()) / config.batch_size;
  if (per_epoch == 0) throw std::runtime_error("limit: the dataset is smaller than a batch");
  const int64_t threads = std::max<int64_t>(config.workers, 1);
  const int64_t ring = config.prefetch + 1;  // slots per thread, as mploader's per worker
  RunTimer timer(config);
  {
    const SlotLayout layout = slot_layout(*fields, config.batch_size);
    SlotMemory memory(layout.slot_bytes * static_cast<size_t>(threads * ring));
    const auto slot_memory = [&](int64_t slot) {
      return memory.base() + layout.slot_bytes * static_cast<size_t>(slot);
    };
    Handoff handoff(config.batches, threads, ring);
    const auto produce = [&](int64_t t) {
      std::vector<int64_t> indices(static_cast<size_t>(config.batch_size));
      std::vector<uint8_t*> bases(layout.fields.size());
      try {
        for (int64_t b = t; b < config.batches; b += threads) {
          const int64_t slot = handoff.acquire(t);
          if (slot < 0) return;
          const int64_t first = (b % per_epoch) * config.batch_size;
          for (size_t r = 0; r < indices.size(); ++r) indices[r] = first + static_cast<int64_t>(r);
          for (size_t k = 0; k < bases.size(); ++k) bases[k] = slot_memory(slot) + layout.offsets[k];
          mploader::BatchWriter writer(layout.fields, bases.data(), layout.field_bytes.data(),
                                       indices.size());
          data->write_batch(indices.data(), indices.size(), writer);
          handoff.publish(b, slot);
        }
      } catch (...) {
        handoff.fail(std::current_exception());
      }
    };
    std::vector<std::thread> producers;
    for (int64_t t = 0; t < threads; ++t) producers.emplace_back(produce, t);
    try {
      for (int64_t b = 0; b < config.batches; ++b) {
        timer.waiting();
        const int64_t slot = handoff.take(b);
        int64_t bytes = 0;
        for (size_t k = 0; k < layout.fields.size(); ++k) {
          bytes += static_cast<int64_t>(layout.field_bytes[k]) * config.batch_size;
        }
        timer.batch(config.batch_size, bytes);
        handoff.release(b % threads, slot);
      }
    } catch (...) {
      handoff.fail(std::current_exception());
      for (std::thread& p : producers) p.join();
      throw;
    }
    for (std::thread& p : producers) p.join();
    timer.loop_done();
  }
  timer.torn_down();
  RunResult result = timer.finish(config, data->size());
  result.note = "one in-place write of every byte (write_batch) by " + std::to_string(threads) +
                " threads into " + std::to_string(threads * ring) + " preallocated slots";
  return result;
}

}  // namespace bench
