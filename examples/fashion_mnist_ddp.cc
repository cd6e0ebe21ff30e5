// Data-parallel training fed by mploader: each rank is a process with its own Loader (2 worker
// processes) over its DistributedSampler shard of Fashion-MNIST; gradients are averaged over
// c10d's Gloo process group at every step, as DistributedDataParallel does, and at the end the
// ranks prove their parameters are identical. Rank 0 prints the loss and test accuracy.
//
// Started with torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) it is one rank.
// Started without them it is the launcher: it serves the rendezvous store on a free port and
// runs --world-size copies of itself as the ranks.
//
//   fashion_mnist_ddp [--world-size 2] [--epochs 1] [--batch-size 32] [--workers 2]
//                     [--max-batches 0] [--min-accuracy 0] [--data-dir DIR]
#include "fashion_mnist.h"
#include "gloo_ranks.h"

#include <mploader/mploader.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <array>
#include <chrono>
#include <cstdio>

namespace {

struct Flags {
  std::string data_dir = examples::kFashionMnistDir;
  int world_size = 2;
  int epochs = 1;
  int64_t batch_size = 32;  // per rank
  int64_t workers = 2;      // per rank
  int64_t max_batches = 0;  // per rank and epoch; 0: the whole shard
  double min_accuracy = 0;
  double lr = 1e-3;
  uint64_t seed = 1;
  int timeout_s = 600;
};

// One epoch on this rank; returns {loss sum, batches, samples} of this rank.
std::array<double, 3> train_epoch(const Flags& f, mploader::Loader& loader,
                                  torch::nn::Sequential& model, torch::optim::Optimizer& optimizer,
                                  c10d::ProcessGroupGloo& group, int world) {
  std::array<double, 3> sums{0, 0, 0};
  for (mploader::Batch& b : loader) {
    optimizer.zero_grad();
    at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(b["image"]), b["label"]);
    loss.backward();
    examples::average_gradients(*model, group, world);
    optimizer.step();
    sums[0] += loss.item<double>();
    sums[1] += 1;
    sums[2] += static_cast<double>(b.size());
    if (sums[1] == f.max_batches) break;  // every rank stops at the same step
  }
  return sums;
}

// Test samples this rank classifies right, over its share rank::world of the test set.
int64_t correct_on_shard(torch::nn::Sequential& model, const examples::FashionMnistSplit& test,
                         int64_t rank, int64_t world) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t n = test.labels.size(0);
  const at::Tensor x = examples::normalized_images(test).slice(0, rank, n, world);
  const at::Tensor predicted = model->forward(x).argmax(1);
  model->train();
  return predicted.eq(test.labels.slice(0, rank, n, world)).sum().item<int64_t>();
}


// This rank's Loader: its DistributedSampler shard, built before the process group so that its
// persistent workers are forked before Gloo starts threads.
std::unique_ptr<mploader::Loader> make_loader(const Flags& f,
                                              std::shared_ptr<examples::FashionMnist> train_set,
                                              std::shared_ptr<mploader::DistributedSampler> sampler,
                                              int64_t rank) {
  mploader::LoaderOptions o;
  o.world_size = sampler->world_size();
  o.sampler = std::move(sampler);
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.persistent_workers = true;
  o.rank = rank;
  o.timeout = std::chrono::seconds(60);
  return std::make_unique<mploader::Loader>(std::move(train_set), o);
}

int run_rank(const Flags& f, const mploader::LaunchInfo& launch) {
  const int64_t rank = launch.rank, world = launch.world_size;
  torch::set_num_threads(1);  // ranks and their workers share the machine's cores
  auto train_set = std::make_shared<examples::FashionMnist>(f.data_dir, "train");
  const examples::FashionMnistSplit test = examples::read_fashion_mnist(f.data_dir, "t10k");
  auto sampler = std::make_shared<mploader::DistributedSampler>(world, rank, true, f.seed);
  const std::unique_ptr<mploader::Loader> loader = make_loader(f, train_set, sampler, rank);
  auto group = examples::connect(launch);

  torch::manual_seed(static_cast<int64_t>(f.seed));
  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  examples::broadcast_parameters(*model, *group);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(f.lr));
  if (rank == 0) {
    std::printf(
        "Fashion-MNIST MLP 784-256-10 data-parallel on %lld ranks (c10d Gloo): %zu "
        "samples per rank and epoch, batch %lld per rank, %lld workers per rank\n",
        static_cast<long long>(world), sampler->num_samples(train_set->size()),
        static_cast<long long>(f.batch_size), static_cast<long long>(f.workers));
  }
  double accuracy = 0;
  for (int epoch = 0; epoch < f.epochs; ++epoch) {
    mploader::verify_ranks_agree(*group, mploader::agreement_of(*sampler, train_set->size(), epoch),
                                 examples::kCollectiveTimeout);
    loader->set_epoch(epoch);
    const auto start = std::chrono::steady_clock::now();
    const std::array<double, 3> mine = train_epoch(f, *loader, model, optimizer, *group, world);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    const double correct = static_cast<double>(correct_on_shard(model, test, rank, world));
    at::Tensor sums = at::tensor({mine[0], mine[1], mine[2], correct}, at::kDouble);
    examples::allreduce(*group, sums);
    const double* s = sums.data_ptr<double>();
    accuracy = s[3] / static_cast<double>(test.labels.size(0));
    if (rank == 0) {
      std::printf(
          "epoch %d/%d: train loss %.4f, test accuracy %.2f %%, %.0f samples over %lld "
          "ranks in %.1f s (%.0f samples/s)\n",
          epoch + 1, f.epochs, s[0] / std::max(s[1], 1.0), 100 * accuracy, s[2],
          static_cast<long long>(world), took.count(), s[2] / took.count());
      std::fflush(stdout);
    }
  }
  if (!examples::replicas_identical(*model, *group)) {
    std::fprintf(stderr, "rank %lld: parameters differ between ranks\n",
                 static_cast<long long>(rank));
    return 1;
  }
  if (rank == 0) {
    std::printf("parameters identical on all %lld ranks (%lld values)\n",
                static_cast<long long>(world),
                static_cast<long long>(examples::flatten(model->parameters()).numel()));
    if (accuracy < f.min_accuracy) {
      std::fprintf(stderr, "test accuracy %.2f %% is under --min-accuracy %.2f %%\n",
                   100 * accuracy, 100 * f.min_accuracy);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned mploader worker runs here and never returns
  Flags f;
  CLI::App app("Data-parallel MLP training on Fashion-MNIST over c10d Gloo, fed by mploader");
  app.add_option("--data-dir", f.data_dir, "folder of the Fashion-MNIST IDX files");
  app.add_option("--world-size", f.world_size, "ranks the launcher starts")
      ->check(CLI::Range(1, 64));
  app.add_option("--epochs", f.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", f.batch_size, "samples per batch and rank")
      ->check(CLI::PositiveNumber);
  app.add_option("--workers", f.workers, "mploader worker processes per rank")
      ->check(CLI::Range(0, 256));
  app.add_option("--max-batches", f.max_batches, "steps per epoch (0: the whole shard)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--min-accuracy", f.min_accuracy, "exit 1 if the final test accuracy is lower")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lr", f.lr, "Adam's learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", f.seed, "seed of the initial weights and the shuffling");
  app.add_option("--timeout", f.timeout_s, "seconds the launcher lets the ranks run")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::string who = "launcher";
  try {
    const mploader::LaunchInfo launch = mploader::launch_info_from_env();
    if (launch.launcher == "none") return examples::launch_ranks(f.world_size, f.timeout_s, argv);
    who = "rank " + std::to_string(launch.rank);
    return run_rank(f, launch);
  } catch (const mploader::Error& e) {
    std::fprintf(stderr, "fashion_mnist_ddp %s: %s\n", who.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {  // unreadable data names the file; c10d errors say why
    std::fprintf(stderr, "fashion_mnist_ddp %s: %s\n", who.c_str(), e.what());
    return 1;
  }
}
