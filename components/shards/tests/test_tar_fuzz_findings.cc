// Inputs the tar fuzz target (fuzz/fuzz_tar.cc) found, fed exactly as found (tests/data/fuzz).
#include <catch2/catch.hpp>

#include "shards/tar_reader.h"

#include <mploader/errors.h>

#include <stdexcept>
#include <string>

namespace test_tar_fuzz_findings {

namespace tar = mploader::shards::detail;

TEST_CASE("shards: a gzipped member claiming 1 TiB is cut short, not allocated") {
  // Its header says 2^40 bytes and 3 are there. The size of a compressed tar's member cannot
  // be checked against the file, and reading it resized the buffer to 1 TiB up front
  // (std::bad_alloc, or the OOM killer where memory is overcommitted).
  const std::string path = std::string(MPLOADER_TEST_DATA_DIR) + "/fuzz/tar-gz-member-of-1tib.tar.gz";
  tar::TarReader reader(path);
  tar::RawSample sample;
  try {
    reader.next(&sample);
    FAIL("the member was read whole");
  } catch (const mploader::Error& e) {
    INFO(e.what());
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("member \"a.cls\"") &&
                             Catch::Contains("of its 1099511627776 bytes"));
  }
}

TEST_CASE("shards: a member whose header says -2^63 bytes is a damaged header") {
  // libarchive takes the size as set and reads on past the end of the 4 KB file: reading the
  // member grew its buffer to 2 GB (the fuzzer's memory limit).
  const std::string path =
      std::string(MPLOADER_TEST_DATA_DIR) + "/fuzz/tar-member-size-int64-min.tar";
  const std::string expected = "member \"sub/c.cls\" has a size of -9223372036854775808 bytes "
                               "in its header: the header is damaged";
  try {
    tar::scan_shard(path);
    FAIL("the scan accepted it");
  } catch (const mploader::OptionError& e) {
    CHECK(e.option() == "tar_paths");
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains(expected));
  }
  tar::TarReader reader(path);
  tar::RawSample sample;
  CHECK_THROWS_WITH(reader.next(&sample), Catch::Contains(expected));
}

}  // namespace test_tar_fuzz_findings
