#include "loader/messages.h"

#include "util/units.h"

namespace mploader::detail::messages {

std::string overflow_warning(int worker, uint64_t sequence) {
  return "mploader: worker " + std::to_string(worker) +
         " has no free ring slot because the training loop still holds its earlier batches; "
         "batch " + std::to_string(sequence) +
         " and others like it travel in one-off shared segments, which is slower. Clone the "
         "tensors you keep (t.clone()) so that slots go back to the workers, release batches "
         "sooner, or raise prefetch_factor.";
}

std::string overflow_copying(uint64_t live, uint64_t live_bytes, int64_t mappings,
                             uint64_t map_limit) {
  return "mploader: this process has " + std::to_string(mappings) +
         " memory mappings and may have at most " + std::to_string(map_limit) +
         " (vm.max_map_count); " + std::to_string(live) +
         " of them are batches (or tensors taken from them) kept from one-off shared segments, " +
         human_bytes(live_bytes) + " in all. Further such batches are copied into private "
         "memory instead of mapped, which is slower. Clone the tensors you keep (t.clone()) so "
         "that the batches' shared memory goes back to the workers, and release batches you no "
         "longer need. Logged once per loader.";
}

std::string overflow_map_failed(int worker, uint64_t bytes, const std::string& why,
                                uint64_t live, uint64_t live_bytes, int64_t mappings,
                                uint64_t map_limit) {
  return "mploader: could not map or copy a batch of " + human_bytes(bytes) + " from worker " +
         std::to_string(worker) + ": " + why + ". The process holds " + std::to_string(live) +
         " batches in one-off shared segments (" + human_bytes(live_bytes) +
         "), one memory mapping each; it has " + std::to_string(mappings) +
         " mappings and may have at most " + std::to_string(map_limit) +
         " (vm.max_map_count). Clone the tensors you keep from batches (t.clone()) "
         "and release the batches, so that their memory goes back to the workers.";
}

std::string batch_larger_than_slot(int worker, uint64_t sequence, uint64_t batch_bytes,
                                   uint64_t slot_bytes, uint64_t max_batch_bytes) {
  const std::string option = max_batch_bytes == 0
                                 ? "max_batch_bytes is 0, estimated from sample 0"
                                 : "max_batch_bytes = " + std::to_string(max_batch_bytes);
  return "mploader: batch " + std::to_string(sequence) + " from worker " +
         std::to_string(worker) + " is " + human_bytes(batch_bytes) +
         ", larger than a ring slot of " + human_bytes(slot_bytes) + " (" + option +
         "); it and other oversized batches travel in one-off shared segments, which is "
         "slower. Set max_batch_bytes to the largest batch you expect (at least " +
         std::to_string(batch_bytes) + "). Logged once per loader.";
}

std::string corrupt_ring(int worker, uint32_t descriptor) {
  return "mploader: worker " + std::to_string(worker) + " returned task " +
         std::to_string(descriptor) +
         " which was not in flight: the shared ring is corrupt (a bug in mploader, or dataset "
         "code writing out of bounds). The loader cannot go on; recreate it.";
}

std::string corrupt_slot(int worker, uint32_t descriptor, int64_t slot, uint32_t num_slots) {
  return "mploader: worker " + std::to_string(worker) + " says task " +
         std::to_string(descriptor) + " wrote its batch into payload slot " +
         std::to_string(slot) + ", which it cannot have taken from its " +
         std::to_string(num_slots) + " slots (out of range, held by a batch the training loop "
         "still has, or no slot was promised to the task): the shared memory is corrupt (a bug in "
         "mploader, or dataset code writing out of bounds). The loader cannot go on; recreate "
         "it.";
}

std::string overflow_receive_failed(int worker, const std::string& why) {
  return "mploader: could not receive an oversized batch from worker " + std::to_string(worker) +
         ": " + why + ". Raise max_batch_bytes so batches fit the ring slots, or raise the "
         "open-file limit (ulimit -n).";
}

}  // namespace mploader::detail::messages
