// Fuzzes mploader-bench's --config TOML files (bench/cli.cc over CLI11's config reader): any
// bytes as the file, through a memfd's /proc/self/fd path, parsed and validated as
// `mploader-bench --config FILE` would. Refusing with UsageError is fine (main() prints it and
// exits 2); a crash, UB or another exception is not.
#include "bench/cli.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::cout.setstate(std::ios::failbit);  // a file that asks for help must not flood the log
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.toml", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  std::string program = "mploader-bench", option = "--config";
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  char* argv[] = {program.data(), option.data(), path.data(), nullptr};
  try {
    bench::Plan plan;
    bench::parse_command_line(3, argv, plan);
  } catch (const bench::UsageError&) {
  }
  close(fd);
  return 0;
}
