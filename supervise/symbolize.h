// Turning a worker's raw return addresses into function, file and line, in the main process.
// Workers are forks of this process, so their code sits at the same addresses as ours.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail {

struct Frame {
  uint64_t address = 0;
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file when debug info is there
  int line = 0;
  std::string module;    // the shared object or executable
  std::string describe() const;  // "0x... in f(int) at a.cc:12 (libx.so)"
};

// Symbolizes with libdwfl over this process's mappings. Return addresses are looked up one
// byte back so the line is the call's, not the next statement's; `exact_pc` (the interrupted
// instruction itself, 0 if none) is looked up as it is.
// `maps` is the /proc/<pid>/maps text of the process the addresses come from (a spawned worker
// has its own layout); empty means this process's layout, which a forked worker shares.
std::vector<Frame> symbolize(const std::vector<uint64_t>& addresses, uint64_t exact_pc = 0,
                             const std::string& maps = {});

// Drops the frames of the signal handler itself, so that the first frame left is where the
// worker was when the signal came: the frame at `pc` (the interrupted instruction), else the
// one after the kernel's signal trampoline. The stack ends at the worker loop.
std::vector<Frame> frames_after_signal(const std::vector<Frame>& frames, uint64_t pc);

}  // namespace mploader::detail
