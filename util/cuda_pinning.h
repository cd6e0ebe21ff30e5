// Page-locking ("pinning") of host memory with the CUDA runtime, for LoaderOptions::pin_memory.
// The rest of the library never includes CUDA headers: this interface is all it sees.
//
// The CUDA runtime is opened with dlopen at the first use, never linked (see cuda_pinning.cc),
// so the library loads and works on machines without it. Every function is for the main
// process only: workers never touch CUDA. Thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace mploader::detail::cuda {

// Why host memory cannot be pinned in this process (no CUDA runtime, no device, a CPU-only
// libtorch, built without CUDA), or nullopt when it can. Decided once, then cached; the first
// call that finds a reason logs it (once per process).
std::optional<std::string> pinning_unavailable_reason();

// Registers [base, base + bytes) as page-locked for every CUDA context. False (logged once)
// when pinning is unavailable or the runtime refused; the memory is then used unpinned.
bool pin(void* base, size_t bytes);
// Undoes pin(). Must run before the memory is unmapped, in the process that pinned it.
void unpin(void* base);

}  // namespace mploader::detail::cuda
