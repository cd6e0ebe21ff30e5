// Payload slots are taken when a worker starts writing a batch, most recently freed first: a
// loop that drops its batches keeps each worker on one or two slots whatever prefetch_factor
// is; held batches still use every slot and never deadlock; a corrupt slot id is an Error.
#include "ipc/region_layout.h"
#include "test_datasets.h"

#include "machine_load.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace test_slot_reuse {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

// A worker slower than the loop: the case the slot choice is for.
class SlowDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return CountingDataset::get(index);
  }
};

// The worker's own region, found from inside the worker by its memfd's name.
ipc::RegionHeader* own_region() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("mploader-worker-") == std::string::npos) continue;
    auto* h = reinterpret_cast<ipc::RegionHeader*>(std::strtoull(line.c_str(), nullptr, 16));
    if (h->magic == ipc::kRegionMagic) return h;
  }
  return nullptr;
}

// At `bad`, in the worker, points the free-slot stack at slot 0 (which the test's loop holds);
// or, from `bad` on, empties it at every sample: what a stray write by dataset code could do.
// Emptied once, a slot the loop releases before the worker's next pop would refill it, and
// that pop would succeed: at every sample, some pop finds the stack empty however the loop
// and the worker interleave.
class StackCorruptingDataset : public CountingDataset {
 public:
  StackCorruptingDataset(size_t n, int64_t bad, bool empty)
      : CountingDataset(n), bad_(bad), empty_(empty) {}
  Sample get(int64_t index) override {
    if (index == bad_ || (empty_ && index > bad_)) {
      ipc::RegionHeader* h = own_region();
      if (h == nullptr) throw std::runtime_error("test: the worker's region is not mapped");
      const uint32_t top = empty_ ? ipc::SharedSlotStack::kEmpty : 0;
      h->free_slots.head.store(ipc::SharedSlotStack::pack(top, 777), std::memory_order_release);
    }
    return CountingDataset::get(index);
  }

 private:
  int64_t bad_;
  bool empty_;
};

LoaderOptions slot_options(int64_t workers, int64_t prefetch) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = 4;
  o.prefetch_factor = prefetch;
  o.max_batch_bytes = 65536;  // one slot: 64 KiB exactly, so slot addresses are 64 KiB apart
  return o;
}

}  // namespace

TEST_CASE("slots: a loop that drops each batch keeps each worker off some of its 5 slots",
          "[loader][process][slot]") {
  const machine_load::CpuPressure pressure;
  Loader loader(std::make_shared<SlowDataset>(480), slot_options(2, 4));
  std::map<int, std::set<const void*>> slots_of_worker;
  int64_t next_label = 0;
  for (Batch& b : loader) {
    REQUIRE(b["label"][0].item<int64_t>() == next_label);
    next_label += static_cast<int64_t>(b.size());
    slots_of_worker[b.worker_id()].insert(b["x"].data_ptr());
  }
  CHECK(next_label == 480);
  REQUIRE(slots_of_worker.size() == 2);
  for (const auto& [worker, slots] : slots_of_worker) {
    INFO("worker " << worker << " wrote into " << slots.size() << " distinct slots");
    // Slots taken when a task is issued rotate through all prefetch_factor + 1 = 5. Taken
    // at task start, most recently freed first, a worker uses 1 to 3 of them, and 4 when a
    // loaded machine delays the loop's releases; all 5 only when other programs kept the loop
    // off the CPUs so long that every slot was held at once, which says nothing of the rule.
    const std::string busy = pressure.busy_reason();
    if (slots.size() > 4 && !busy.empty()) {
      WARN("skipped: " << busy << "; worker " << worker << " used all " << slots.size()
                       << " slots");
      return;
    }
    CHECK(slots.size() <= 4);
  }
}

TEST_CASE("slots: held batches fill every slot, then overflow, and loading goes on",
          "[loader][process][slot]") {
  Loader loader(std::make_shared<CountingDataset>(400), slot_options(1, 4));
  std::vector<Batch> held;
  while (auto b = loader.next()) held.push_back(std::move(*b));
  REQUIRE(held.size() == 100);
  // The first five are in the five slots of the one worker's ring, each in its own.
  std::set<uintptr_t> addresses;
  for (size_t i = 0; i < 5; ++i) {
    addresses.insert(reinterpret_cast<uintptr_t>(held[i]["x"].data_ptr()));
  }
  REQUIRE(addresses.size() == 5);
  const uintptr_t lowest = *addresses.begin();
  for (uintptr_t a : addresses) CHECK((a - lowest) % 65536 == 0);
  CHECK(*addresses.rbegin() - lowest == 4 * 65536);
  for (size_t k = 0; k < held.size(); ++k) {
    REQUIRE(held[k]["label"][3].item<int64_t>() == static_cast<int64_t>(4 * k + 3));
  }
  held.clear();  // every slot goes back on the stack; the next epoch uses them again
  int64_t count = 0;
  for (Batch& b : loader) {
    REQUIRE(b["x"][0][0].item<float>() == static_cast<float>(count));
    count += static_cast<int64_t>(b.size());
  }
  CHECK(count == 400);
}

TEST_CASE("slots: a worker naming a slot the loop still holds is an Error, not a crash",
          "[loader][process][slot]") {
  // Batch 2 (indices 8-11) is loaded while the loop holds batch 0, in slot 0.
  Loader loader(std::make_shared<StackCorruptingDataset>(40, 8, /*empty=*/false),
                slot_options(1, 2));
  std::optional<Batch> first = loader.next();
  REQUIRE(first);
  std::string message;
  try {
    for (int i = 0; i < 10; ++i) (void)loader.next();
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("payload slot 0") && Catch::Contains("corrupt") &&
                          Catch::Contains("recreate it"));
  CHECK_THROWS_AS(loader.next(), Error);  // the loader stays unusable
}

TEST_CASE("slots: an empty free-slot stack fails that batch with an Error naming it",
          "[loader][process][slot]") {
  Loader loader(std::make_shared<StackCorruptingDataset>(40, 8, /*empty=*/true),
                slot_options(1, 2));
  std::string message;
  try {
    while (loader.next()) {
    }
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("free-slot stack is corrupt") &&
                          Catch::Contains("is empty"));
}

}  // namespace test_slot_reuse
