// The shared free-slot stack (ipc/slot_stack.h) on its own, across threads and across a real
// fork, and the main process's SlotPool over it: promises, adoption, release, rebuild.
#include "ipc/region_layout.h"
#include "ipc/shm_region.h"
#include "ipc/slot_stack.h"
#include "process/slot_pool.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace test_slot_stack {

using namespace mploader::ipc;
using mploader::detail::SlotPool;

namespace {

// The stack and a return ring, as one shared mapping: the popper hands every id it pops back
// over the ring, the pusher pushes what comes back, as the worker and the training loop do.
struct Shared {
  SharedSlotStack stack;
  TaskRing returned;  // popper -> pusher; holds all kMaxSlots ids at once
  std::atomic<uint32_t> duplicates;
  std::atomic<uint32_t> popper_done;
};

ShmRegion make_shared_memory() {
  auto created = ShmRegion::create(sizeof(Shared), "", "test-slot-stack");
  REQUIRE(created.ok());
  ShmRegion region = created.take();
  auto* s = new (region.base()) Shared();
  s->stack.reset();
  s->returned.init();
  s->duplicates.store(0);
  s->popper_done.store(0);
  for (uint32_t i = kMaxSlots; i > 0; --i) s->stack.push(i - 1);
  return region;
}

// Pops `pops` ids, holding up to three at a time (a worker's batches not yet received), and
// counts an id popped while it is already held: that would be one slot handed out twice.
void popper(Shared& s, uint32_t pops) {
  std::vector<bool> held(kMaxSlots, false);
  std::vector<uint32_t> holding;
  uint32_t done = 0;
  while (done < pops) {
    uint32_t slot;
    if (holding.size() < 3 && s.stack.try_pop(slot)) {
      if (slot >= kMaxSlots || held[slot]) {
        s.duplicates.fetch_add(1);
        continue;
      }
      held[slot] = true;
      holding.push_back(slot);
      ++done;
      continue;
    }
    if (holding.empty()) continue;  // the pusher has them all; it pushes them back soon
    held[holding.front()] = false;
    while (!s.returned.try_push(holding.front())) {
    }
    holding.erase(holding.begin());
  }
  for (uint32_t slot : holding) {
    while (!s.returned.try_push(slot)) {
    }
  }
  s.popper_done.store(1, std::memory_order_release);
}

// Pushes back every id the popper returns until it is done and the ring is empty.
void pusher(Shared& s) {
  for (;;) {
    const bool done = s.popper_done.load(std::memory_order_acquire) != 0;
    uint32_t slot;
    bool any = false;
    while (s.returned.try_pop(slot)) {
      s.stack.push(slot);
      any = true;
    }
    if (done && !any) return;
  }
}

// After the run, the stack must hold every id exactly once: none lost, none twice.
void check_every_id_once(Shared& s) {
  std::vector<int> seen(kMaxSlots, 0);
  uint32_t slot;
  uint32_t count = 0;
  while (s.stack.try_pop(slot) && count <= kMaxSlots) {
    REQUIRE(slot < kMaxSlots);
    ++seen[slot];
    ++count;
  }
  CHECK(count == kMaxSlots);
  for (uint32_t i = 0; i < kMaxSlots; ++i) CHECK(seen[i] == 1);
  CHECK(s.duplicates.load() == 0);
}

}  // namespace

TEST_CASE("slot stack: last in, first out, and an empty stack says so", "[slot]") {
  SharedSlotStack stack;
  stack.reset();
  uint32_t slot = 99;
  CHECK_FALSE(stack.try_pop(slot));
  for (uint32_t i = 0; i < 5; ++i) stack.push(i);
  for (uint32_t i = 5; i > 0; --i) {
    REQUIRE(stack.try_pop(slot));
    CHECK(slot == i - 1);
  }
  CHECK_FALSE(stack.try_pop(slot));
  // The slot released last is the next one taken, whatever was released before it.
  stack.push(3);
  stack.push(1);
  REQUIRE(stack.try_pop(slot));
  CHECK(slot == 1);
  stack.push(4);
  REQUIRE(stack.try_pop(slot));
  CHECK(slot == 4);
  REQUIRE(stack.try_pop(slot));
  CHECK(slot == 3);
}

TEST_CASE("slot stack: a new region holds every slot, slot 0 on top", "[slot]") {
  const auto g = RegionGeometry::compute(4, 5, 8, 4096);
  auto region = ShmRegion::create(g.total_bytes, "", "test-slot-layout");
  REQUIRE(region.ok());
  RegionView::initialize(region.value().base(), g, 0);
  SharedSlotStack& stack = RegionView(region.value().base()).header().free_slots;
  uint32_t slot;
  for (uint32_t i = 0; i < 5; ++i) {
    REQUIRE(stack.try_pop(slot));
    CHECK(slot == i);
  }
  CHECK_FALSE(stack.try_pop(slot));
  CHECK(RegionView(region.value().base()).header().version == kLayoutVersion);
}

TEST_CASE("slot stack: two threads pass 200000 slots, each held by one side at a time",
          "[slot]") {
  ShmRegion region = make_shared_memory();
  Shared& s = *static_cast<Shared*>(region.base());
  std::thread pop_thread([&] { popper(s, 200000); });
  pusher(s);
  pop_thread.join();
  check_every_id_once(s);
}

TEST_CASE("slot stack: a child process pops 300000 slots the parent pushes, none lost or doubled",
          "[slot][process]") {
  ShmRegion region = make_shared_memory();
  Shared& s = *static_cast<Shared*>(region.base());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    popper(s, 300000);
    _exit(0);
  }
  pusher(s);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  check_every_id_once(s);
}

TEST_CASE("slot pool: promises, adoption, release and rebuild keep every slot accounted for",
          "[slot]") {
  const auto g = RegionGeometry::compute(4, 5, 8, 4096);
  auto created = ShmRegion::create(g.total_bytes, "", "test-slot-pool");
  REQUIRE(created.ok());
  auto region = std::make_shared<ShmRegion>(created.take());
  RegionView::initialize(region->base(), g, 0);
  SharedSlotStack& stack = RegionView(region->base()).header().free_slots;
  SlotPool pool(region, &stack, 5);
  for (int i = 0; i < 5; ++i) REQUIRE(pool.reserve());
  CHECK_FALSE(pool.reserve());  // every slot promised
  uint32_t slot;
  REQUIRE(stack.try_pop(slot));  // the worker's side
  CHECK(slot == 0);
  REQUIRE(pool.adopt(slot));
  CHECK_FALSE(pool.adopt(slot));  // leased already: a corrupt id
  CHECK_FALSE(pool.adopt(5));     // out of range
  pool.unreserve();               // a task that overflowed
  CHECK(pool.unpromised() == 1);
  pool.release(0);
  CHECK(pool.unpromised() == 2);
  CHECK(pool.leased() == 0);
  REQUIRE(pool.reserve());
  REQUIRE(stack.try_pop(slot));
  CHECK(slot == 0);  // the slot released last comes first
  REQUIRE(pool.adopt(slot));
  REQUIRE(pool.reserve());
  REQUIRE(stack.try_pop(slot));  // a worker that dies holding slot 1, never published
  CHECK(slot == 1);
  pool.rebuild();  // slot 0 stays leased; 1 to 4 are free again, promises dropped
  CHECK(pool.unpromised() == 4);
  CHECK(pool.leased() == 1);
  std::vector<uint32_t> free;
  while (stack.try_pop(slot)) free.push_back(slot);
  CHECK(free == std::vector<uint32_t>{1, 2, 3, 4});
  for (uint32_t s : free) {
    REQUIRE(pool.reserve());
    REQUIRE(pool.adopt(s));
    pool.release(s);
  }
  pool.release(0);
  CHECK(pool.unpromised() == 5);
  CHECK(pool.leased() == 0);
}

}  // namespace test_slot_stack
