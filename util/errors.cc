// The names of the DeathCause values (mploader/errors.h): what crash reports, log lines and
// mploader-report say; and the one form of a message (util/errors.h). Here, at the bottom
// layer, so that every layer that throws or reads a WorkerCrashed sees one list and every
// layer and component words its errors alike; mploader-report compiles this file alone,
// without libtorch.
#include "util/errors.h"

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

namespace detail {
namespace {

void append_sentence(std::string& out, std::string_view text) {
  out += text;
  if (!text.empty() && text.back() != '.') out += '.';
}

}  // namespace

std::string message(std::string_view who, std::string_view what, std::string_view fix) {
  std::string out = "mploader: ";
  if (!who.empty()) {
    out += who;
    out += ": ";
  }
  append_sentence(out, what);
  if (!fix.empty()) {
    out += ' ';
    append_sentence(out, fix);
  }
  return out;
}

}  // namespace detail
}  // namespace mploader
