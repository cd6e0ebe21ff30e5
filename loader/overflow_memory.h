// The main process's side of overflow segments: a batch that did not go into a ring slot
// arrives as a one-off shared-memory fd.
//
// Mapping the segment keeps the batch zero-copy, but every mapping that a kept tensor holds
// alive counts against the process's vm.max_map_count (65,530 by default): a loop that keeps
// a view of every batch would fail with ENOMEM after about that many. So the mappings alive
// are counted process-wide (the limit is per process, whatever the number of loaders), and
// past a threshold well below the limit a segment is read into private memory and closed at
// once: kept batches then cost memory but no mapping.
#pragma once

#include "ipc/unique_fd.h"

#include <cstdint>
#include <memory>

namespace mploader::detail {

struct OverflowMemory {
  uint8_t* base = nullptr;
  std::shared_ptr<void> owner;  // unmaps or frees when the batch's last tensor goes
  bool copied = false;          // read into private memory (past the threshold)
};

// Maps `bytes` of `fd`, or copies them when too many segments are mapped already or mmap hits
// the mapping limit; `fd` is closed either way (a descriptor per kept batch would hit ulimit
// -n). Throws mploader::Error naming vm.max_map_count and the remedy when neither works.
OverflowMemory take_overflow_segment(ipc::UniqueFd fd, uint64_t bytes, int worker);

// Overflow segments this process has mapped and not yet unmapped, and their bytes.
uint64_t live_overflow_segments();
uint64_t live_overflow_bytes();
// Live segments past which batches are copied: the smaller of 1,024 and 1/16 of the limit.
uint64_t overflow_copy_threshold();
// Lines of /proc/self/maps: the mappings this process has now (for messages), -1 if unknown.
int64_t mappings_now();
// /proc/sys/vm/max_map_count, or 65,530 (the kernel's default) when it cannot be read.
uint64_t max_map_count();

}  // namespace mploader::detail
