// SpscIndexRing: a single-producer single-consumer ring of 32-bit ids that lives inside a
// shared-memory region and is used by two processes.
//
// Lock-free: a process that dies mid-operation leaves at worst one entry unpublished, never a
// held lock. Producer and consumer indices sit on separate cache lines, and each side caches
// the other's index so the common case touches no shared line it does not own. Inline
// storage, no pointers: the struct means the same at any mapping address.
// Exactly one producer and one consumer; either may be in another process.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace mploader::ipc {

template <uint32_t kCapacity>
struct SpscIndexRing {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "needs address-free atomics");

  struct alignas(64) ProducerLine {
    std::atomic<uint64_t> tail;  // next position to write; written by the producer only
    uint64_t cached_head;        // producer's last view of head
  };
  struct alignas(64) ConsumerLine {
    std::atomic<uint64_t> head;  // next position to read; written by the consumer only
    uint64_t cached_tail;        // consumer's last view of tail
  };

  ProducerLine producer;
  ConsumerLine consumer;
  alignas(64) uint32_t entries[kCapacity];

  // Only before both sides start.
  void init() {
    producer.tail.store(0, std::memory_order_relaxed);
    producer.cached_head = 0;
    consumer.head.store(0, std::memory_order_relaxed);
    consumer.cached_tail = 0;
  }

  // Producer side. False when full.
  [[nodiscard]] bool try_push(uint32_t value) {
    const uint64_t tail = producer.tail.load(std::memory_order_relaxed);
    if (tail - producer.cached_head >= kCapacity) {
      producer.cached_head = consumer.head.load(std::memory_order_acquire);
      if (tail - producer.cached_head >= kCapacity) return false;
    }
    entries[tail % kCapacity] = value;
    producer.tail.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. False when empty.
  [[nodiscard]] bool try_pop(uint32_t& value) {
    const uint64_t head = consumer.head.load(std::memory_order_relaxed);
    if (head == consumer.cached_tail) {
      consumer.cached_tail = producer.tail.load(std::memory_order_acquire);
      if (head == consumer.cached_tail) return false;
    }
    value = entries[head % kCapacity];
    consumer.head.store(head + 1, std::memory_order_release);
    return true;
  }
};

}  // namespace mploader::ipc
