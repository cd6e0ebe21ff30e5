// Texts of the errors and warnings a user sees from the dispatcher: each says what happened,
// with the numbers, and what to do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail::messages {

std::string overflow_warning(int worker, uint64_t sequence);
std::string corrupt_ring(int worker, uint32_t descriptor);
// The worker named a payload slot it cannot have taken (out of range, already held by a batch,
// or taken by a task that was promised none).
std::string corrupt_slot(int worker, uint32_t descriptor, int64_t slot, uint32_t num_slots);
std::string overflow_receive_failed(int worker, const std::string& why);
// Past the threshold of live overflow mappings: batches are copied from now on.
std::string overflow_copying(uint64_t live, uint64_t live_bytes, int64_t mappings,
                             uint64_t map_limit);
// A received segment could be neither mapped nor copied.
std::string overflow_map_failed(int worker, uint64_t bytes, const std::string& why,
                                uint64_t live, uint64_t live_bytes, int64_t mappings,
                                uint64_t map_limit);
// A batch too large for its slot (not the loop holding every slot).
std::string batch_larger_than_slot(int worker, uint64_t sequence, uint64_t batch_bytes,
                                   uint64_t slot_bytes, uint64_t max_batch_bytes);

}  // namespace mploader::detail::messages
