#include "gloo_ranks.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

extern char** environ;

namespace examples {
namespace {

// Set by the launcher: it serves the store itself, so every rank is a client of it.
constexpr const char* kStoreHostedEnv = "MPLOADER_EXAMPLE_STORE_HOSTED";

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroupGloo> connect(const mploader::LaunchInfo& launch) {
  c10d::TCPStoreOptions so;
  // The store is already served by this program's launcher, or by torchrun's agent (which says
  // so with TORCHELASTIC_USE_AGENT_STORE); otherwise rank 0 serves it.
  const bool hosted = std::getenv(kStoreHostedEnv) != nullptr ||
                      env_or("TORCHELASTIC_USE_AGENT_STORE", "") == "True";
  so.isServer = launch.rank == 0 && !hosted;
  so.numWorkers = static_cast<int>(launch.world_size);
  so.waitWorkers = false;
  so.timeout = kCollectiveTimeout;
  const std::string port = env_or("MASTER_PORT", "");
  if (port.empty()) throw std::runtime_error("MASTER_PORT is not set; torchrun sets it");
  so.port = static_cast<uint16_t>(std::stoi(port));
  auto store = c10::make_intrusive<c10d::TCPStore>(env_or("MASTER_ADDR", "127.0.0.1"), so);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  options->timeout = kCollectiveTimeout;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(launch.rank),
                                                     static_cast<int>(launch.world_size), options);
}

// The Gloo group itself (a c10d::ProcessGroup in libtorch 1.13, a c10d::Backend in 2.x), whose
// collectives are the same in both.
void allreduce(c10d::ProcessGroupGloo& group, at::Tensor& t, c10d::ReduceOp op) {
  std::vector<at::Tensor> v{t};
  c10d::AllreduceOptions o;
  o.reduceOp = op;
  group.allreduce(v, o)->wait();
}

at::Tensor flatten(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : ts) flat.push_back(t.reshape({-1}));
  return torch::cat(flat);
}
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& ts) {
  int64_t at = 0;
  for (at::Tensor& t : ts) {
    t.copy_(flat.slice(0, at, at + t.numel()).view_as(t));
    at += t.numel();
  }
}

void average_gradients(torch::nn::Module& model, c10d::ProcessGroupGloo& group, int64_t world) {
  std::vector<at::Tensor> grads;
  for (at::Tensor& p : model.parameters()) grads.push_back(p.mutable_grad());
  at::Tensor flat = flatten(grads);
  allreduce(group, flat);  // one collective per step for all gradients
  flat.div_(static_cast<double>(world));
  unflatten(flat, grads);
}

void broadcast_parameters(torch::nn::Module& model, c10d::ProcessGroupGloo& group) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> params = model.parameters();
  std::vector<at::Tensor> flat{flatten(params)};
  group.broadcast(flat)->wait();
  unflatten(flat[0], params);
}

bool replicas_identical(torch::nn::Module& model, c10d::ProcessGroupGloo& group) {
  const at::Tensor mine = flatten(model.parameters()).detach();
  at::Tensor lowest = mine.clone(), highest = mine.clone();
  allreduce(group, lowest, c10d::ReduceOp::MIN);
  allreduce(group, highest, c10d::ReduceOp::MAX);
  return lowest.equal(highest);
}

int launch_ranks(int world_size, int timeout_s, char** argv) {
  c10d::TCPStoreOptions so;
  so.isServer = true;
  so.port = 0;  // any free port: parallel runs never collide
  so.waitWorkers = false;
  so.timeout = kCollectiveTimeout;
  c10d::TCPStore store("127.0.0.1", so);
  const std::string port = std::to_string(store.getPort());
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world_size; ++rank) {
    // Everything the child needs is built before fork: between fork and exec it may not allocate.
    std::vector<std::string> env{"RANK=" + std::to_string(rank),
                                 "LOCAL_RANK=" + std::to_string(rank),
                                 "WORLD_SIZE=" + std::to_string(world_size),
                                 "MASTER_ADDR=127.0.0.1",
                                 "MASTER_PORT=" + port,
                                 std::string(kStoreHostedEnv) + "=1"};
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a rank never outlives its launcher
      if (getppid() != parent) _exit(1);
      execve("/proc/self/exe", argv, envp.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  int result = 0;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (size_t left = pids.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      --left;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code != 0 && result == 0) {
        std::fprintf(stderr, "a rank (pid %d) failed with status %d; stopping the others\n", pid,
                     code);
        result = code;
        for (pid_t p : pids) kill(p, SIGKILL);
      }
    } else if (!timed_out && std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "ranks still running after --timeout %d s; killing them\n", timeout_s);
      for (pid_t p : pids) kill(p, SIGKILL);
      result = result != 0 ? result : 1;
      timed_out = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return result;
}

}  // namespace examples
