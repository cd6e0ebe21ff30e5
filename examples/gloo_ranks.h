// Data-parallel plumbing the examples share: c10d's Gloo group from torchrun's variables (or
// from the launcher below), collectives over it, and a launcher that runs a program's ranks as
// copies of itself when no torchrun started it.
#pragma once

#include <mploader/launch_info.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>

#include <chrono>
#include <string>
#include <vector>

namespace examples {

// How long a collective (and the rendezvous) may wait for the other ranks.
constexpr auto kCollectiveTimeout = std::chrono::seconds(120);

// This rank's Gloo group, meeting the others through the store at MASTER_ADDR:MASTER_PORT.
c10::intrusive_ptr<c10d::ProcessGroupGloo> connect(const mploader::LaunchInfo& launch);
// The Gloo group itself (a c10d::ProcessGroup in libtorch 1.13, a c10d::Backend in 2.x), whose
// collectives are the same in both.
void allreduce(c10d::ProcessGroupGloo& group, at::Tensor& t,
               c10d::ReduceOp op = c10d::ReduceOp::SUM);
// All parameters (or their gradients) as one flat tensor, and back.
at::Tensor flatten(const std::vector<at::Tensor>& ts);
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& ts);
// Every gradient of `model`, averaged over the ranks in one collective (what DDP does).
void average_gradients(torch::nn::Module& model, c10d::ProcessGroupGloo& group, int64_t world);
// Rank 0's initial weights on every rank, as DistributedDataParallel starts.
void broadcast_parameters(torch::nn::Module& model, c10d::ProcessGroupGloo& group);
// Averaged gradients keep the replicas equal: true when every parameter is bitwise the same on
// every rank (the elementwise minimum over the ranks equals the maximum).
bool replicas_identical(torch::nn::Module& model, c10d::ProcessGroupGloo& group);
// Serves the store on a free port and runs `world_size` copies of this program (argv) as the
// ranks; returns the first failing rank's status, killing the others so that none waits for
// ever in a collective, or 1 when they run past `timeout_s`.
int launch_ranks(int world_size, int timeout_s, char** argv);

}  // namespace examples
