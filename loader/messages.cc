#include "loader/messages.h"

#include <signal.h>

namespace mploader::detail::messages {

std::string index_list(const std::vector<int64_t>& indices, size_t limit) {
  std::string s;
  for (size_t i = 0; i < indices.size() && i < limit; ++i) {
    s += (i ? ", " : "") + std::to_string(indices[i]);
  }
  if (indices.size() > limit) s += ", ...";
  return s + " (" + std::to_string(indices.size()) + " in all)";
}

std::string overflow_warning(int worker, uint64_t sequence) {
  return "mploader: worker " + std::to_string(worker) +
         " has no free ring slot because the training loop still holds its earlier batches; "
         "batch " + std::to_string(sequence) +
         " and others like it travel in one-off shared segments, which is slower. Release "
         "batches (and tensors taken from them) sooner, or raise prefetch_factor.";
}

std::string corrupt_ring(int worker, uint32_t descriptor) {
  return "mploader: worker " + std::to_string(worker) + " returned task " +
         std::to_string(descriptor) +
         " which was not in flight: the shared ring is corrupt (a bug in mploader, or dataset "
         "code writing out of bounds). The loader cannot go on; recreate it.";
}

std::string overflow_receive_failed(int worker, const std::string& why) {
  return "mploader: could not receive an oversized batch from worker " + std::to_string(worker) +
         ": " + why + ". Raise max_batch_bytes so batches fit the ring slots, or raise the "
         "open-file limit (ulimit -n).";
}

std::string death_hint(const worker::ExitStatus& status) {
  switch (status.signal) {
    case 0:
      return "The worker exited on its own: dataset code may have called exit() or abort() "
             "through a library; run with num_workers = 0 to see it in this process.";
    case SIGKILL:
      return "SIGKILL cannot be caught: it usually comes from the kernel's OOM killer (look "
             "for 'Killed process' in dmesg, and at the container's memory limit) or from "
             "another process. Lower num_workers, prefetch_factor or batch_size if memory is "
             "short.";
    case SIGBUS:
      return "A bus error in a worker usually means a memory-mapped file shrank under it or a "
             "shared-memory filesystem ran out of space; mploader reserves its own rings up "
             "front, so look at files the dataset maps.";
    case SIGSEGV:
      return "A segmentation fault in the worker: dataset code (or a library it calls) read or "
             "wrote invalid memory. Reproduce with num_workers = 0 under a debugger or ASan.";
    case SIGTERM:
      return "Another process (a scheduler, a job manager, a person) terminated the worker.";
    default:
      return "Reproduce with num_workers = 0 to see the failure in this process.";
  }
}

}  // namespace mploader::detail::messages
