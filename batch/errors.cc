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
    case DeathCause::kFloatingPoint: return "fpe";
    case DeathCause::kIllegalInstruction: return "illegal_instruction";
    case DeathCause::kAbort: return "abort";
    case DeathCause::kExit: return "exit";
    case DeathCause::kHang: return "hang";
    case DeathCause::kOtherSignal: return "signal";
  }
  return "signal";
}

}  // namespace mploader
