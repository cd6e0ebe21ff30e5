/// @file
/// Exceptions that reach the training loop. Every exception mploader itself throws derives
/// from Error, so one `catch (const mploader::Error&)` catches them all; what() reads
/// "mploader: <who>: <what happened>. <what to do>." Exceptions thrown by a dataset's or a
/// collate function's own code reach the loop inside a WorkerError; libtorch's own errors
/// pass through as c10::Error. Inside ipc/ and worker/ errors travel as values (ipc/status.h);
/// they become one of these at the public boundary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {

/// Base of every mploader exception: catch this to catch them all. Besides the classes below,
/// the components' own derive from it: SampleError (collate.h), vision::DecodeError and
/// vision::TransformError, remote::TransportError, and the shard readers' errors.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;  ///< what() is the message given.
};

/// An option or an input a user gave is wrong. option() names it.
class OptionError : public Error {
 public:
  /// `message` is the whole text what() returns; `option` names the input it is about.
  OptionError(std::string option, const std::string& message)
      : Error(message), option_(std::move(option)) {}
  /// The option or input at fault: "batch_size", "state", "log_level", ...
  const std::string& option() const { return option_; }

 private:
  std::string option_;
};

/// An exception raised by code in another language inside a dataset (a Python `__getitem__`):
/// type_name() is that language's name for its type ("builtins.ValueError"), which a
/// WorkerError reports as its exception_type(), and what() is its message with its traceback.
class ForeignError : public Error {
 public:
  /// `message` is what() returns; `type_name` is the foreign type's qualified name.
  ForeignError(std::string type_name, const std::string& message)
      : Error(message), type_name_(std::move(type_name)) {}
  const std::string& type_name() const { return type_name_; }  ///< "builtins.ValueError".

 private:
  std::string type_name_;
};

/// Shared memory could not be created or reserved (for example ENOSPC on a full tmpfs).
class ShmError : public Error {
 public:
  /// `message` is what() returns; the numbers are also given apart.
  ShmError(const std::string& message, uint64_t bytes_needed, uint64_t bytes_free)
      : Error(message), bytes_needed_(bytes_needed), bytes_free_(bytes_free) {}
  uint64_t bytes_needed() const { return bytes_needed_; }  ///< Bytes the rings needed.
  uint64_t bytes_free() const { return bytes_free_; }  ///< Bytes free on their filesystem.

 private:
  uint64_t bytes_needed_;
  uint64_t bytes_free_;
};

/// Dataset or collate code threw inside a worker. The worker itself is still alive.
class WorkerError : public Error {
 public:
  /// `message` is what() returns; the facts are also given apart.
  WorkerError(const std::string& message, int worker_id, int64_t sample_index,
              std::string exception_type, std::string original_message)
      : Error(message),
        worker_id_(worker_id),
        sample_index_(sample_index),
        exception_type_(std::move(exception_type)),
        original_message_(std::move(original_message)) {}
  int worker_id() const { return worker_id_; }  ///< The worker the code threw in.
  /// The dataset index of the sample at fault: the one being read, or the one the collator
  /// refused (a SampleError: its shape, names or layout); -1 when collate failed for the batch
  /// as a whole.
  int64_t sample_index() const { return sample_index_; }
  /// The thrown exception's type, demangled (std::runtime_error, c10::Error, ...).
  const std::string& exception_type() const { return exception_type_; }
  /// The thrown exception's own what().
  const std::string& original_message() const { return original_message_; }

 private:
  int worker_id_;
  int64_t sample_index_;
  std::string exception_type_;
  std::string original_message_;
};

/// Why a worker died, as the main process classified it from the evidence.
enum class DeathCause {
  kShmFull,             ///< SIGBUS in a shared-memory mapping: its filesystem ran out of space
  kOutOfMemory,         ///< SIGKILL with the memory cgroup's OOM-kill counter risen
  kKilled,              ///< SIGKILL with no OOM evidence: another process killed it
  kTerminated,          ///< SIGTERM, SIGINT, SIGHUP or SIGQUIT from outside
  kSegfault,            ///< SIGSEGV in dataset or collate code
  kBusError,            ///< SIGBUS outside a shared-memory mapping (a misaligned access, say)
  kFileTruncated,       ///< SIGBUS past the end of a mapped file: it was truncated while mapped
  kFloatingPoint,       ///< SIGFPE (integer division by zero)
  kIllegalInstruction,  ///< SIGILL
  kAbort,               ///< SIGABRT (abort(), a failed assert, std::terminate)
  kExit,                ///< the worker exited on its own
  kHang,                ///< no progress within the timeout; killed after a stack was taken
  kOtherSignal,         ///< any other signal; keep it last: kDeathCauseCount counts up to it
};

/// The number of DeathCause values: the causes are 0 to kDeathCauseCount - 1.
inline constexpr int kDeathCauseCount = static_cast<int>(DeathCause::kOtherSignal) + 1;

/// "shm_full", "oom", ...: the names used in crash reports.
const char* to_string(DeathCause cause);

/// The facts a WorkerCrashed carries; the full report is in the JSON file at report_path.
struct CrashSummary {
  int worker_id = -1;  ///< 0 .. num_workers - 1
  int pid = 0;         ///< The dead worker's process id.
  DeathCause cause = DeathCause::kOtherSignal;  ///< What the evidence says killed it.
  int signal = 0;     ///< the terminating signal, 0 when the worker exited
  int exit_code = 0;  ///< when signal == 0
  std::vector<int64_t> in_flight_indices;  ///< Samples of the batches it held, not delivered.
  std::string report_path;  ///< empty when the report could not be written
};

/// A worker process died (signal, exit or hang) while the loader needed it. what() is a short
/// human summary: worker, pid, cause, evidence, in-flight indices, remedy.
class WorkerCrashed : public Error {
 public:
  /// `message` is what() returns; `summary` holds the facts.
  WorkerCrashed(const std::string& message, CrashSummary summary)
      : Error(message), summary_(std::move(summary)) {}
  const CrashSummary& summary() const { return summary_; }  ///< All the facts below.
  int worker_id() const { return summary_.worker_id; }  ///< CrashSummary::worker_id
  int pid() const { return summary_.pid; }  ///< CrashSummary::pid
  DeathCause cause() const { return summary_.cause; }  ///< CrashSummary::cause
  int signal() const { return summary_.signal; }  ///< CrashSummary::signal
  int exit_code() const { return summary_.exit_code; }  ///< CrashSummary::exit_code
  /// CrashSummary::in_flight_indices
  const std::vector<int64_t>& in_flight_indices() const { return summary_.in_flight_indices; }
  /// CrashSummary::report_path: read it with mploader-report.
  const std::string& report_path() const { return summary_.report_path; }

 private:
  CrashSummary summary_;
};

/// No batch arrived within LoaderOptions::timeout: the worker that owed it was asked for its
/// stack and killed (cause kHang).
class TimeoutError : public WorkerCrashed {
 public:
  using WorkerCrashed::WorkerCrashed;  ///< The same as WorkerCrashed's.
};

/// A batch is larger than a ring slot and LoaderOptions::allow_overflow is false.
class BatchTooLarge : public Error {
 public:
  /// `message` is what() returns; the sizes are also given apart.
  BatchTooLarge(const std::string& message, uint64_t batch_bytes, uint64_t slot_bytes)
      : Error(message), batch_bytes_(batch_bytes), slot_bytes_(slot_bytes) {}
  uint64_t batch_bytes() const { return batch_bytes_; }  ///< Bytes the batch needs.
  uint64_t slot_bytes() const { return slot_bytes_; }  ///< Bytes of a slot (max_batch_bytes).

 private:
  uint64_t batch_bytes_;
  uint64_t slot_bytes_;
};

}  // namespace mploader
