// The names of the DeathCause values (mploader/errors.h): what crash reports, log lines and
// mploader-report say. Here, at the bottom layer, so that every layer that throws or reads a
// WorkerCrashed sees one list; mploader-report compiles this file alone, without libtorch.
#include <mploader/errors.h>

namespace mploader {

const char* to_string(DeathCause cause) {
  switch (cause) {
    case DeathCause::kShmFull: return "shm_full";
    case DeathCause::kOutOfMemory: return "oom";
    case DeathCause::kKilled: return "killed";
    case DeathCause::kTerminated: return "terminated";
    case DeathCause::kSegfault: return "segfault";
    case DeathCause::kBusError: return "bus_error";
    case DeathCause::kFileTruncated: return "file_truncated";
    case DeathCause::kFloatingPoint: return "fpe";
    case DeathCause::kIllegalInstruction: return "illegal_instruction";
    case DeathCause::kAbort: return "abort";
    case DeathCause::kExit: return "exit";
    case DeathCause::kHang: return "hang";
    case DeathCause::kOtherSignal: break;
  }
  return "signal";  // kOtherSignal's: a value outside the enum is some other signal too
}

}  // namespace mploader
