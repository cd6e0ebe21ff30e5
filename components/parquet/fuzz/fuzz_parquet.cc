// Fuzzes what ParquetShards parses: the recipe a spawned worker rebuilds the dataset from
// (first byte even), and Parquet files (first byte odd: the rest is the file, opened through a
// memfd's /proc/self/fd path as a user's file would be), whose footer is read and whose every
// row is read as a worker reads it (at most 4096 rows). Refusing with mploader::Error, the
// recipe's and a damaged file's alike, is fine; a crash, UB or another exception is not.
#include <mploader/errors.h>
#include <mploader/parquet/parquet_shards.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

namespace pq = mploader::parquet;

void read_rows(pq::ParquetShards& data) {
  const int64_t rows = std::min<int64_t>(static_cast<int64_t>(data.size()), 4096);
  for (int64_t i = 0; i < rows; ++i) (void)data.get(i);
}

void read_file(const uint8_t* data, size_t size, bool fill_nulls) {
  const int fd = memfd_create("fuzz.parquet", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  pq::ParquetShardsOptions options;
  options.nulls = fill_nulls ? pq::NullPolicy::kMask : pq::NullPolicy::kRefuse;
  try {
    pq::ParquetShards dataset({path}, options);
    read_rows(dataset);
  } catch (const mploader::Error&) {
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 1) {
    read_file(data + 1, size - 1, data[0] % 4 == 3);
    return 0;
  }
  try {
    auto dataset = pq::ParquetShards::from_recipe(
        std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
    read_rows(*dataset);
  } catch (const mploader::Error&) {
  }
  return 0;
}
