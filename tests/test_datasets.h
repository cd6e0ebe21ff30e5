// Small datasets for the tests: each sample says which index it came from, so a test can check
// exactly-once delivery and order from the batch contents alone.
#pragma once

#include <mploader/mploader.h>

#include <ATen/ATen.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <stdexcept>
#include <thread>

namespace testing_datasets {

// "x": float [4] filled with the index; "label": int64 scalar = index.
class CountingDataset : public mploader::Dataset {
 public:
  explicit CountingDataset(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  // Registered as "counting" in test_spawn.cc.
  std::optional<mploader::DatasetRecipe> recipe() const override {
    return mploader::DatasetRecipe{"counting", std::to_string(n_)};
  }
  mploader::Sample get(int64_t index) override {
    return {{"x", at::full({4}, static_cast<double>(index), at::kFloat)},
            {"label", at::scalar_tensor(index, at::kLong)}};
  }

 private:
  size_t n_;
};

// Like CountingDataset, but misbehaves at one index: throws, dies by a signal, or hangs.
class FaultyDataset : public CountingDataset {
 public:
  enum class Fault {
    kThrow,     // std::runtime_error
    kSignal,    // raise(signal) from outside dataset logic (SIGKILL, SIGTERM, ...)
    kExit,      // _exit(3)
    kSleep,     // 3 s, then carry on
    kHang,      // sleep forever
    kSegv,      // write through a null pointer
    kFpe,       // integer division by zero
    kAbort,     // std::abort()
    kBusFile,   // write past the end of a shared file mapping in `path`
    kBusFull,   // fill a shared file larger than the tmpfs at `path` holds
    kAllocate,  // allocate and touch memory without bound (run under a memory limit)
  };
  FaultyDataset(size_t n, int64_t bad_index, Fault fault, int signal = SIGKILL,
                std::string path = "/dev/shm")
      : CountingDataset(n), bad_(bad_index), fault_(fault), signal_(signal),
        path_(std::move(path)) {}
  // Registered as "faulty" in test_spawn.cc: "n bad_index fault signal".
  std::optional<mploader::DatasetRecipe> recipe() const override {
    return mploader::DatasetRecipe{
        "faulty", std::to_string(size()) + " " + std::to_string(bad_) + " " +
                      std::to_string(static_cast<int>(fault_)) + " " + std::to_string(signal_)};
  }
  mploader::Sample get(int64_t index) override {
    if (index == bad_) {
      switch (fault_) {
        case Fault::kThrow:
          throw std::runtime_error("cannot decode sample " + std::to_string(index));
        case Fault::kSignal:
          raise(signal_);
          break;
        case Fault::kExit:
          _exit(3);
        case Fault::kSleep:
          std::this_thread::sleep_for(std::chrono::seconds(3));
          break;
        default:
          misbehave();
      }
    }
    return CountingDataset::get(index);
  }

 private:
  void misbehave();

  int64_t bad_;
  Fault fault_;
  int signal_;
  std::string path_;
};

// Sample i has "tokens" of length 1 + i % 7 (values i), for the padding collate.
class VarLenDataset : public mploader::Dataset {
 public:
  explicit VarLenDataset(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    return {{"tokens", at::full({1 + index % 7}, index, at::kLong)},
            {"label", at::scalar_tensor(index, at::kLong)}};
  }

 private:
  size_t n_;
};

// Like CountingDataset, but sample `bad` is wrong for collation: "x" of shape [9] (kShape),
// "lbl" instead of "label" (kKey), no tensors at all (kEmpty), or "x" sparse (kSparse). With
// bad = -1 every sample is.
class MismatchDataset : public CountingDataset {
 public:
  enum class Kind { kShape, kKey, kEmpty, kSparse };
  MismatchDataset(size_t n, int64_t bad, Kind kind) : CountingDataset(n), bad_(bad), kind_(kind) {}
  mploader::Sample get(int64_t index) override {
    if (bad_ >= 0 && index != bad_) return CountingDataset::get(index);
    const at::Tensor label = at::scalar_tensor(index, at::kLong);
    switch (kind_) {
      case Kind::kShape:
        return {{"x", at::zeros({9})}, {"label", label}};
      case Kind::kKey:
        return {{"x", at::zeros({4})}, {"lbl", label}};
      case Kind::kEmpty:
        return {};
      case Kind::kSparse:
        return {{"x", at::zeros({4}).to_sparse()}, {"label", label}};
    }
    return {};
  }

 private:
  int64_t bad_;
  Kind kind_;
};

}  // namespace testing_datasets
