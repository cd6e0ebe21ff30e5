// Shared memory: reserved up front (a full tmpfs is ENOSPC at creation, never SIGBUS), and
// nothing is left in the directory.
#include "ipc/shm_region.h"
#include "tmpfs_mount.h"

#include <catch2/catch.hpp>

#include <dirent.h>

#include <cstring>

namespace test_shm {

using namespace mploader::ipc;

namespace {
int count_entries(const std::string& dir) {
  int n = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) n += std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..");
  closedir(d);
  return n;
}
}  // namespace

TEST_CASE("shm: memfd region is writable over its whole size", "[shm]") {
  auto r = ShmRegion::create(3 * 4096 + 1, "", "test-shm");
  REQUIRE(r.ok());
  auto* p = static_cast<unsigned char*>(r.value().base());
  std::memset(p, 0xab, r.value().size());
  CHECK(p[r.value().size() - 1] == 0xab);
}

TEST_CASE("shm: a region in a directory leaves no file behind", "[shm]") {
  char dir[] = "/dev/shm/mploader-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  {
    auto r = ShmRegion::create(1 << 20, dir, "test-shm");
    REQUIRE(r.ok());
    CHECK(count_entries(dir) == 0);
  }
  CHECK(count_entries(dir) == 0);
  rmdir(dir);
}

TEST_CASE("shm: a full tmpfs is ENOSPC at creation with the free space known", "[shm][root]") {
  TmpfsMount mount("1M");
  if (!mount.ok()) {
    WARN("skipped: " << mount.why_not());
    return;
  }
  auto small = ShmRegion::create(256 * 1024, mount.path(), "fits");
  REQUIRE(small.ok());
  auto big = ShmRegion::create(4 << 20, mount.path(), "too-big");
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().error == ENOSPC);
  CHECK(big.error().syscall == "posix_fallocate");
  const int64_t free_bytes = free_bytes_of_dir(mount.path());
  CHECK(free_bytes >= 0);
  CHECK(free_bytes <= (1 << 20));
  CHECK(count_entries(mount.path()) == 0);
}

}  // namespace test_shm
