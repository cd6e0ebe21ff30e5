// Fuzzes what H5Dataset parses: the recipe a spawned worker rebuilds the dataset from (first
// byte even), and HDF5 files (first byte odd: the rest is the file, opened through a memfd's
// /proc/self/fd path as a user's file would be), whose metadata is described and whose first
// and last rows of each field are read as a worker reads them. Refusing with mploader::Error
// is fine; a crash, UB or another exception is not.
#include <mploader/errors.h>
#include <mploader/hdf5/h5_dataset.h>

#include "hdf5/h5_meta.h"
#include "hdf5/h5_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace h5 = mploader::hdf5;

void read_file(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.h5", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const std::vector<h5::H5Field> fields = {{"x", "/x"}, {"text", "/text"}};
  try {
    const auto info = h5::detail::read_metadata(path, fields, false);
    h5::detail::FileReader reader(path, info, h5::H5DatasetOptions{},
                                  h5::detail::stamp_of(path));
    for (size_t k = 0; k < info.size(); ++k) {
      for (int64_t row : {int64_t{0}, info[k].shape[0] - 1}) {
        if (row < 0) continue;
        if (info[k].text) {
          reader.read_text(k, row);
        } else {
          std::vector<uint8_t> out(reader.row_bytes(k) + 1);
          reader.read_rows(k, &row, 1, out.data());
        }
      }
    }
  } catch (const mploader::Error&) {
  }
  close(fd);
}

}  // namespace

// libhdf5 1.10.8 leaks some of what it allocated for a damaged file's metadata when it gives up
// on the file (found by this target; its code, not ours): LeakSanitizer skips allocations made
// inside libhdf5, and still checks ours.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5\n"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 1) {
    read_file(data + 1, size - 1);
    return 0;
  }
  try {
    h5::H5Dataset::from_recipe(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } catch (const mploader::Error&) {
  }
  return 0;
}
