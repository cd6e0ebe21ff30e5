// Exceptions that reach the training loop. Inside ipc/ and worker/ errors travel as values
// (ipc/status.h); they become one of these at the public boundary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {

// Base of every mploader exception: catch this to catch them all.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An option or an input a user gave is wrong. option() names it.
class OptionError : public Error {
 public:
  OptionError(std::string option, const std::string& message)
      : Error(message), option_(std::move(option)) {}
  const std::string& option() const { return option_; }

 private:
  std::string option_;
};

// Shared memory could not be created or reserved (for example ENOSPC on a full tmpfs).
class ShmError : public Error {
 public:
  ShmError(const std::string& message, uint64_t bytes_needed, uint64_t bytes_free)
      : Error(message), bytes_needed_(bytes_needed), bytes_free_(bytes_free) {}
  uint64_t bytes_needed() const { return bytes_needed_; }
  uint64_t bytes_free() const { return bytes_free_; }

 private:
  uint64_t bytes_needed_;
  uint64_t bytes_free_;
};

// Dataset or collate code threw inside a worker. The worker itself is still alive.
class WorkerError : public Error {
 public:
  WorkerError(const std::string& message, int worker_id, int64_t sample_index,
              std::string exception_type, std::string original_message)
      : Error(message),
        worker_id_(worker_id),
        sample_index_(sample_index),
        exception_type_(std::move(exception_type)),
        original_message_(std::move(original_message)) {}
  int worker_id() const { return worker_id_; }
  // -1 when the failure was in collate rather than in one sample.
  int64_t sample_index() const { return sample_index_; }
  const std::string& exception_type() const { return exception_type_; }
  const std::string& original_message() const { return original_message_; }

 private:
  int worker_id_;
  int64_t sample_index_;
  std::string exception_type_;
  std::string original_message_;
};

// A worker process died (signal or exit) while the loader needed it.
class WorkerCrashed : public Error {
 public:
  WorkerCrashed(const std::string& message, int worker_id, int pid, int signal, int exit_code,
                std::vector<int64_t> in_flight_indices)
      : Error(message),
        worker_id_(worker_id),
        pid_(pid),
        signal_(signal),
        exit_code_(exit_code),
        in_flight_indices_(std::move(in_flight_indices)) {}
  int worker_id() const { return worker_id_; }
  int pid() const { return pid_; }
  // The terminating signal, or 0 when the worker exited.
  int signal() const { return signal_; }
  // The exit status when signal() == 0.
  int exit_code() const { return exit_code_; }
  const std::vector<int64_t>& in_flight_indices() const { return in_flight_indices_; }

 private:
  int worker_id_;
  int pid_;
  int signal_;
  int exit_code_;
  std::vector<int64_t> in_flight_indices_;
};

// No batch arrived within LoaderOptions::timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A batch is larger than a ring slot and LoaderOptions::allow_overflow is false.
class BatchTooLarge : public Error {
 public:
  BatchTooLarge(const std::string& message, uint64_t batch_bytes, uint64_t slot_bytes)
      : Error(message), batch_bytes_(batch_bytes), slot_bytes_(slot_bytes) {}
  uint64_t batch_bytes() const { return batch_bytes_; }
  uint64_t slot_bytes() const { return slot_bytes_; }

 private:
  uint64_t batch_bytes_;
  uint64_t slot_bytes_;
};

}  // namespace mploader
