// The SPSC ring and the region layout, exercised across two real processes.
#include "ipc/event_fd.h"
#include "ipc/region_layout.h"
#include "ipc/shm_region.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

namespace test_ring {

using namespace mploader::ipc;

TEST_CASE("ring: push and pop in order, full and empty are reported", "[ring]") {
  auto region = ShmRegion::create(sizeof(TaskRing), "", "test-ring");
  REQUIRE(region.ok());
  auto* ring = new (region.value().base()) TaskRing();
  ring->init();
  uint32_t v;
  CHECK_FALSE(ring->try_pop(v));
  for (uint32_t i = 0; i < kRingCapacity; ++i) REQUIRE(ring->try_push(i));
  CHECK_FALSE(ring->try_push(99));
  for (uint32_t i = 0; i < kRingCapacity; ++i) {
    REQUIRE(ring->try_pop(v));
    CHECK(v == i);
  }
  CHECK_FALSE(ring->try_pop(v));
}

TEST_CASE("ring: a million ids cross from a child process in order", "[ring][process]") {
  auto created = ShmRegion::create(sizeof(TaskRing), "", "test-ring");
  REQUIRE(created.ok());
  ShmRegion region = created.take();
  auto* ring = new (region.base()) TaskRing();
  ring->init();
  auto wake = EventFd::create();
  REQUIRE(wake.ok());
  constexpr uint32_t kCount = 1000000;
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (uint32_t i = 0; i < kCount; ++i) {
      while (!ring->try_push(i)) {
      }
      if (i % 16 == 15) wake.value().notify();  // well inside the ring's 64
    }
    wake.value().notify();
    _exit(0);
  }
  uint32_t expected = 0;
  bool in_order = true;
  while (expected < kCount) {
    uint32_t v;
    if (!ring->try_pop(v)) {
      wake.value().wait(1);
      wake.value().drain();
      continue;
    }
    in_order &= v == expected;
    ++expected;
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(in_order);
}

TEST_CASE("region layout: offsets are aligned and inside the region", "[ring]") {
  auto g = RegionGeometry::compute(3, 4, 64, 10000);
  CHECK(g.slot_bytes % kPageBytes == 0);
  CHECK(g.slot_bytes >= 10000);
  CHECK(g.slots_offset % kPageBytes == 0);
  CHECK(g.descriptor_stride % 64 == 0);
  CHECK(g.descriptor_stride >= sizeof(TaskDescriptor) + 64 * sizeof(int64_t));
  CHECK(g.total_bytes == g.slots_offset + 4 * g.slot_bytes);
  auto region = ShmRegion::create(g.total_bytes, "", "test-layout");
  REQUIRE(region.ok());
  RegionView::initialize(region.value().base(), g, 7);
  RegionView view(region.value().base());
  CHECK(view.header().magic == kRegionMagic);
  CHECK(view.header().worker_id == 7);
  auto* base = static_cast<uint8_t*>(region.value().base());
  CHECK(view.slot(3) + g.slot_bytes == base + g.total_bytes);
  CHECK(reinterpret_cast<uint8_t*>(view.indices(2) + 64) <= base + g.slots_offset);
  CHECK(reinterpret_cast<uintptr_t>(&view.task_ring()) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(&view.done_ring()) % 64 == 0);
}

}  // namespace test_ring
