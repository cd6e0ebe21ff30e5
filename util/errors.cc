// The names of the DeathCause values (mploader/errors.h): what crash reports, log lines and
// mploader-report say; and the one form of a message (util/errors.h). Here, at the bottom
// layer, so that every layer that throws or reads a WorkerCrashed sees one list and every
// layer and component words its errors alike; mploader-report compiles this file alone,
// without libtorch.
#include "util/errors.h"

#include <mploader/errors.h>

namespace mploader {

namespace {

// The one table of the causes' names, in the enum's order: a cause added to the enum without a
// name here fails the static_assert.
constexpr const char* kDeathCauseNames[] = {
    "shm_full",             // kShmFull
    "oom",                  // kOutOfMemory
    "killed",               // kKilled
    "terminated",           // kTerminated
    "segfault",             // kSegfault
    "bus_error",            // kBusError
    "file_truncated",       // kFileTruncated
    "fpe",                  // kFloatingPoint
    "illegal_instruction",  // kIllegalInstruction
    "abort",                // kAbort
    "exit",                 // kExit
    "hang",                 // kHang
    "signal",               // kOtherSignal
};
static_assert(sizeof(kDeathCauseNames) / sizeof(kDeathCauseNames[0]) == kDeathCauseCount,
              "every DeathCause needs its name in kDeathCauseNames, in the enum's order");

}  // namespace

const char* to_string(DeathCause cause) {
  const int index = static_cast<int>(cause);
  // A value outside the enum is some other signal too.
  if (index < 0 || index >= kDeathCauseCount) return "signal";
  return kDeathCauseNames[index];
}

namespace detail {
namespace {

void append_sentence(std::string& out, std::string_view text) {
  out += text;
  if (!text.empty() && text.back() != '.') out += '.';
}

}  // namespace

std::string comma_list(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

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
