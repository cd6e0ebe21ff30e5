#include "supervise/symbolize.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace mploader::detail {
namespace {

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

void describe_address(Dwfl* dwfl, uint64_t address, bool exact, Frame& frame) {
  const Dwarf_Addr pc = exact || address == 0 ? address : address - 1;
  Dwfl_Module* module = dwfl_addrmodule(dwfl, pc);
  if (module == nullptr) return;
  const char* module_name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr, nullptr);
  if (module_name != nullptr) frame.module = module_name;
  frame.function = demangle(dwfl_module_addrname(module, pc));
  if (Dwfl_Line* line = dwfl_module_getsrc(module, pc)) {
    int lineno = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (file != nullptr) frame.file = file;
    frame.line = lineno;
  }
}

}  // namespace

std::string Frame::describe() const {
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%016llx", static_cast<unsigned long long>(address));
  std::string s = addr;
  s += " in " + (function.empty() ? std::string("??") : function);
  if (!file.empty()) s += " at " + file + ":" + std::to_string(line);
  if (!module.empty()) s += " (" + module.substr(module.find_last_of('/') + 1) + ")";
  return s;
}

std::vector<Frame> symbolize(const std::vector<uint64_t>& addresses, uint64_t exact_pc,
                             const std::string& maps) {
  std::vector<Frame> frames;
  for (uint64_t a : addresses) frames.push_back(Frame{a, {}, {}, 0, {}});
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf,
                                           dwfl_standard_find_debuginfo, nullptr,
                                           &debuginfo_path};
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (dwfl == nullptr) return frames;
  int reported = -1;
  if (maps.empty()) {
    reported = dwfl_linux_proc_report(dwfl, getpid());
  } else if (FILE* f = fmemopen(const_cast<char*>(maps.data()), maps.size(), "r")) {
    reported = dwfl_linux_proc_maps_report(dwfl, f);
    std::fclose(f);
  }
  if (reported == 0 && dwfl_report_end(dwfl, nullptr, nullptr) == 0) {
    for (Frame& f : frames) describe_address(dwfl, f.address, f.address == exact_pc, f);
  }
  dwfl_end(dwfl);
  return frames;
}

namespace {

// Ends the stack at the worker loop: what lies below it (the launcher thread, thread start) is
// mploader's plumbing, the same in every report.
std::vector<Frame> up_to_worker_loop(std::vector<Frame> frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].function.rfind("mploader::worker::run_worker", 0) == 0) {
      frames.resize(i + 1);
      break;
    }
  }
  return frames;
}

std::vector<Frame> cut_handler_frames(const std::vector<Frame>& frames, uint64_t pc) {
  for (size_t i = 0; pc != 0 && i < frames.size(); ++i) {
    if (frames[i].address == pc) {
      return std::vector<Frame>(frames.begin() + static_cast<long>(i), frames.end());
    }
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].function.find("restore_rt") != std::string::npos) {
      return std::vector<Frame>(frames.begin() + static_cast<long>(i) + 1, frames.end());
    }
  }
  return frames;
}

}  // namespace

std::vector<Frame> frames_after_signal(const std::vector<Frame>& frames, uint64_t pc) {
  return up_to_worker_loop(cut_handler_frames(frames, pc));
}

}  // namespace mploader::detail
