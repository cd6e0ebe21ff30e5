// SlotPool: the main process's half of a worker's shared free-slot stack (ipc/slot_stack.h).
// The dispatcher does not pick a task's slot; it takes a promise that one will be free when the
// worker starts the task (reserve). The worker pops the most recently freed slot and names it
// in the descriptor; the dispatcher then adopts it for the batch's lease, and the lease pushes
// it back on the stack (release) when the batch's last tensor goes. So a prefetching worker
// refills the slot the training loop just released, not the one released longest ago.
//
// Counts kept here, under one mutex (a Batch, and so release, may run on any thread):
// unpromised + promised + leased == num_slots, where promised counts tasks that may still pop.
// The stack then never runs dry for a promised task. The mutex also serialises the pushes: the
// stack has exactly one pusher, this process.
#pragma once

#include "ipc/shm_region.h"
#include "ipc/slot_stack.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace mploader::detail {

class SlotPool {
 public:
  // `stack` lies inside `region`, which the pool keeps mapped (leases outlive the WorkerPool).
  // The stack holds every slot already (RegionView::initialize).
  SlotPool(std::shared_ptr<ipc::ShmRegion> region, ipc::SharedSlotStack* stack,
           uint32_t num_slots);
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  // Promises a task one free slot; false when every slot is leased or promised.
  [[nodiscard]] bool reserve();
  // A promise the worker did not use (it wrote an overflow segment, or failed before it popped).
  void unreserve();
  // The worker popped `slot` for a task that held a promise: the promise becomes a lease.
  // False when `slot` cannot be one the worker popped (out of range, or leased already): the
  // shared memory is corrupt, and the pool is left unchanged.
  [[nodiscard]] bool adopt(uint32_t slot);
  // Ends a lease: the slot goes back on top of the stack. Any thread.
  void release(uint32_t slot);
  // After the worker was reaped and before its replacement starts: the dead worker's promises
  // are dropped (its tasks are issued again) and the stack holds every slot not leased, slots
  // the dead worker popped and never published included.
  void rebuild();

  uint32_t num_slots() const { return num_slots_; }
  uint32_t unpromised() const;  // for tests and checks
  uint32_t leased() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<ipc::ShmRegion> region_;
  ipc::SharedSlotStack* stack_;
  uint32_t num_slots_;
  uint32_t unpromised_;
  std::vector<bool> leased_;  // by slot
};

}  // namespace mploader::detail
