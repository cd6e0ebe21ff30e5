#include "process/slot_pool.h"

#include <algorithm>

namespace mploader::detail {

SlotPool::SlotPool(std::shared_ptr<ipc::ShmRegion> region, ipc::SharedSlotStack* stack,
                   uint32_t num_slots)
    : region_(std::move(region)), stack_(stack), num_slots_(num_slots), unpromised_(num_slots),
      leased_(num_slots, false) {}

bool SlotPool::reserve() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (unpromised_ == 0) return false;
  --unpromised_;
  return true;
}

void SlotPool::unreserve() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Never above num_slots: a promise dropped by rebuild() cannot be given back twice.
  unpromised_ = std::min(unpromised_ + 1, num_slots_);
}

bool SlotPool::adopt(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot >= num_slots_ || leased_[slot]) return false;
  leased_[slot] = true;
  return true;
}

void SlotPool::release(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot >= num_slots_ || !leased_[slot]) return;  // adopt() admitted only valid slots
  leased_[slot] = false;
  // The lease's tensors are gone, so this thread's reads of the slot are done; the push's
  // release order publishes them to the worker's pop (ipc/slot_stack.h).
  stack_->push(slot);
  ++unpromised_;
}

void SlotPool::rebuild() {
  std::lock_guard<std::mutex> lock(mutex_);
  stack_->reset();
  unpromised_ = 0;
  for (uint32_t s = num_slots_; s > 0; --s) {
    if (leased_[s - 1]) continue;
    stack_->push(s - 1);
    ++unpromised_;
  }
}

uint32_t SlotPool::unpromised() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unpromised_;
}

uint32_t SlotPool::leased() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<uint32_t>(std::count(leased_.begin(), leased_.end(), true));
}

}  // namespace mploader::detail
