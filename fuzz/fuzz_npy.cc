// Fuzzes the .npy reader (datasets/npy.cc): any bytes as a .npy file, mapped by NpyArray as a
// user's file would be (through a memfd's /proc/self/fd path). An accepted array must really
// hold its rows: the first and the last are copied out of the mapping, so a header whose
// shape promises more than the file has ends in a crash here instead of in a worker.
// Refusing with mploader::Error is fine; a crash, UB or another exception is not.
#include <mploader/errors.h>
#include <mploader/npy.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.npy", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const mploader::NpyArray array(path);
    if (array.rows() > 0) {
      if (array.row_bytes() > size) {
        std::fprintf(stderr, "accepted rows of %llu bytes in a file of %zu\n",
                     static_cast<unsigned long long>(array.row_bytes()), size);
        std::abort();
      }
      std::vector<uint8_t> row(array.row_bytes() + 1);  // + 1: never a null buffer
      array.copy_row(0, row.data());
      array.copy_row(array.rows() - 1, row.data());
    }
  } catch (const mploader::Error&) {
  }
  close(fd);
  return 0;
}
