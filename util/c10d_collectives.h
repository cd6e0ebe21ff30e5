// c10d's process groups where this libtorch has them (MPLOADER_HAVE_C10D), and the one
// allgather the rank check and the state gather share. Internal: included by the two .cc files
// that talk to a process group, so that the heavy c10d headers stay out of everything else.
#pragma once

#if __has_include(<torch/csrc/distributed/c10d/ProcessGroup.hpp>)
#define MPLOADER_HAVE_C10D 1
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <vector>

namespace mploader::detail {

// Every rank's `mine`, in rank order; `mine` must have the same shape on every rank, so that
// the collective itself cannot mismatch. c10d::ProcessGroup and c10d::Backend (libtorch 1.13
// and 2.x alike) have the same getSize and allgather.
template <typename Group>
std::vector<at::Tensor> allgather(Group& group, const at::Tensor& mine,
                                  std::chrono::milliseconds timeout) {
  std::vector<at::Tensor> input{mine};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < group.getSize(); ++r) output[0].push_back(at::empty_like(mine));
  c10::intrusive_ptr<c10d::Work> work = group.allgather(output, input);
  work->wait(timeout);
  return output[0];
}

}  // namespace mploader::detail
#endif
