// A real training loop fed by mploader: an MLP (784-256-10) on Fashion-MNIST with torch::nn and
// torch::optim, its batches built by worker processes. Prints the loss, the test accuracy and
// the loading rate per epoch; exits 1 when the last epoch's test accuracy is under
// --min-accuracy, 2 on a bad flag or unreadable data.
//
//   fashion_mnist_mlp [--data-dir DIR] [--epochs 1] [--batch-size 64] [--workers 2]
//                     [--max-batches 0] [--min-accuracy 0] [--start fork|spawn|forkserver]
//                     [--log-level warn]
#include "fashion_mnist.h"

#include <mploader/mploader.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <map>

namespace {

struct Flags {
  std::string data_dir = examples::kFashionMnistDir;
  int epochs = 1;
  int64_t batch_size = 64;
  int64_t workers = 2;
  int64_t max_batches = 0;  // per epoch; 0: the whole epoch
  double min_accuracy = 0;
  double lr = 1e-3;
  uint64_t seed = 1;
  mploader::StartMethod start = mploader::StartMethod::kFork;
  std::string log_level;  // empty: SPDLOG_LEVEL decides
};

// Share of the test set the model classifies right.
double test_accuracy(torch::nn::Sequential& model, const examples::FashionMnistSplit& test) {
  torch::NoGradGuard no_grad;
  model->eval();
  const at::Tensor predicted = model->forward(examples::normalized_images(test)).argmax(1);
  model->train();
  return predicted.eq(test.labels).to(at::kDouble).mean().item<double>();
}

int train(const Flags& f) {
  torch::manual_seed(static_cast<int64_t>(f.seed));
  auto train_set = std::make_shared<examples::FashionMnist>(f.data_dir, "train");
  const examples::FashionMnistSplit test = examples::read_fashion_mnist(f.data_dir, "t10k");

  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.shuffle = true;
  o.seed = f.seed;
  o.start_method = f.start;
  mploader::Loader loader(train_set, o);

  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(f.lr));
  std::printf(
      "Fashion-MNIST MLP 784-256-10, Adam lr %g: %zu training samples, batch %lld, "
      "%lld workers (%zu batches per epoch)\n",
      f.lr, train_set->size(), static_cast<long long>(f.batch_size),
      static_cast<long long>(f.workers), loader.batches_per_epoch());
  double accuracy = 0;
  for (int epoch = 0; epoch < f.epochs; ++epoch) {
    loader.set_epoch(epoch);
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t batches = 0, samples = 0;
    for (mploader::Batch& b : loader) {
      optimizer.zero_grad();
      at::Tensor loss =
          torch::nn::functional::cross_entropy(model->forward(b["image"]), b["label"]);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      samples += static_cast<int64_t>(b.size());
      if (++batches == f.max_batches) break;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    accuracy = test_accuracy(model, test);
    std::printf(
        "epoch %d/%d: train loss %.4f, test accuracy %.2f %%, %lld samples in %.1f s "
        "(%.0f samples/s, loading and training)\n",
        epoch + 1, f.epochs, loss_sum / std::max<int64_t>(batches, 1), 100 * accuracy,
        static_cast<long long>(samples), seconds, samples / seconds);
    std::fflush(stdout);
  }
  if (accuracy < f.min_accuracy) {
    std::fprintf(stderr, "test accuracy %.2f %% is under --min-accuracy %.2f %%\n", 100 * accuracy,
                 100 * f.min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned worker runs here and never returns
  Flags f;
  CLI::App app("Trains an MLP on Fashion-MNIST fed by mploader");
  app.add_option("--data-dir", f.data_dir, "folder of the Fashion-MNIST IDX files");
  app.add_option("--epochs", f.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", f.batch_size, "samples per batch")->check(CLI::PositiveNumber);
  app.add_option("--workers", f.workers, "mploader worker processes (0: in-process)")
      ->check(CLI::Range(0, 256));
  app.add_option("--max-batches", f.max_batches, "stop each epoch after this many (0: all)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--min-accuracy", f.min_accuracy, "exit 1 if the final test accuracy is lower")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lr", f.lr, "Adam's learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", f.seed, "seed of the initial weights and the shuffling");
  const std::map<std::string, mploader::StartMethod> starts{
      {"fork", mploader::StartMethod::kFork},
      {"spawn", mploader::StartMethod::kSpawn},
      {"forkserver", mploader::StartMethod::kForkserver}};
  app.add_option("--start", f.start, "how workers start: fork, spawn or forkserver")
      ->transform(CLI::CheckedTransformer(starts, CLI::ignore_case));
  app.add_option("--log-level", f.log_level,
                 "mploader's log level (trace, debug, info, warn, error, critical, off); "
                 "overrides SPDLOG_LEVEL");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (!f.log_level.empty()) mploader::set_log_level(mploader::parse_log_level(f.log_level));
  } catch (const mploader::OptionError& e) {
    std::fprintf(stderr, "--log-level: %s\n", e.what());
    return 2;
  }
  try {
    return train(f);
  } catch (const mploader::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::runtime_error& e) {  // unreadable data: the message names the file
    std::fprintf(stderr, "fashion_mnist_mlp: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist_mlp: %s\n", e.what());
    return 1;
  }
}
