// SharedSlotStack: the free payload slots of one worker's region, a lock-free LIFO that lives
// inside the region and is used by two processes.
//
// Contract: one pusher (the main process, whose pushes are serialised by its own mutex, see
// process/worker_pool.h SlotPool) and one popper (the worker). Pop returns the slot pushed most
// recently, so a worker refills the slot the training loop just released, while its pages are
// still in cache, instead of cycling through every slot of the ring.
//
// The head word packs (top slot, ABA tag) and changes only by compare-and-swap; next[] links
// each free slot to the one below it. With one popper ABA cannot happen (only the popper takes
// a slot off, so the top it read stays on the stack until its own CAS); the tag, bumped by
// every change, makes that hold without leaning on the one-popper rule, at no cost.
// No pointers, no mutex: a process that dies mid-operation leaves the stack either as it was or
// with its one operation done. A worker that dies holding a popped slot loses it until the main
// process rebuilds the stack (reset() and push(), only while no worker runs).
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace mploader::ipc {

// A worker's region holds at most this many payload slots (prefetch_factor + 1, and
// prefetch_factor < kMaxDescriptors).
constexpr uint32_t kMaxSlots = 64;

// TaskDescriptor::payload_slot values that are not a slot.
constexpr int32_t kNoSlot = -1;         // write into a one-off overflow segment
constexpr int32_t kSlotAtStart = -2;    // pop a free slot when the batch's size is known

struct SharedSlotStack {
  static constexpr uint32_t kEmpty = 0xffffffffu;
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "needs address-free atomics");
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "needs address-free atomics");

  alignas(64) std::atomic<uint64_t> head;  // low 32 bits: top slot or kEmpty; high: tag
  std::atomic<uint32_t> next[kMaxSlots];   // next[s]: the free slot below s

  static uint64_t pack(uint32_t slot, uint32_t tag) {
    return (static_cast<uint64_t>(tag) << 32) | slot;
  }
  static uint32_t slot_of(uint64_t word) { return static_cast<uint32_t>(word); }
  static uint32_t tag_of(uint64_t word) { return static_cast<uint32_t>(word >> 32); }

  // Empties the stack. Only while neither side uses it (before a worker starts, or after it
  // was reaped): the next process start orders it before the worker's first pop.
  void reset() {
    head.store(pack(kEmpty, 0), std::memory_order_relaxed);
    for (auto& n : next) n.store(kEmpty, std::memory_order_relaxed);
  }

  // The pusher's side; `slot` < kMaxSlots and not on the stack (the caller checks both).
  void push(uint32_t slot) {
    uint64_t old = head.load(std::memory_order_relaxed);
    for (;;) {
      // Relaxed: published by the release below. The popper cannot be reading next[slot]: it
      // reads only the next[] of the slot at the top, and `slot` is not on the stack.
      next[slot].store(slot_of(old), std::memory_order_relaxed);
      // Release: everything this process did before the push (its last reads of the slot's
      // tensors, the link above) happens-before whatever the popper does after an acquire
      // load that sees this head, or a later one: every later change to head is an RMW, so it
      // continues this release sequence. A failed CAS only reloads `old` (relaxed: the pusher
      // reads no memory the popper wrote).
      if (head.compare_exchange_weak(old, pack(slot, tag_of(old) + 1), std::memory_order_release,
                                     std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // The popper's side. False when empty. The slot returned is the one pushed last.
  [[nodiscard]] bool try_pop(uint32_t& slot) {
    // Acquire: pairs with push's release, so next[top] and the main process's last use of the
    // slot are visible before the worker reads the link or writes the slot.
    uint64_t old = head.load(std::memory_order_acquire);
    for (;;) {
      const uint32_t top = slot_of(old);
      if (top == kEmpty) return false;
      if (top >= kMaxSlots) return false;  // corrupt: the caller reports an empty stack
      const uint32_t below = next[top].load(std::memory_order_relaxed);
      // Acquire on both outcomes: a failure means a push happened, and its link must be read.
      if (head.compare_exchange_weak(old, pack(below, tag_of(old) + 1), std::memory_order_acquire,
                                     std::memory_order_acquire)) {
        slot = top;
        return true;
      }
    }
  }
};

static_assert(std::is_standard_layout_v<SharedSlotStack>);

}  // namespace mploader::ipc
