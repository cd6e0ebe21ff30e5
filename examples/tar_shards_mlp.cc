// An MLP trained from tar shards wherever they are: a folder, https:// URLs or an S3 bucket.
// Only the shards' location (and, for a bucket, the usual AWS credentials) is needed: the
// manifest beside the shards gives the counts, and each shard is downloaded once per machine
// into the shard cache. Each sample is "<key>.img" (784 bytes, a 28x28 grey image) and
// "<key>.cls" (its class as text), as bench/ and the tests write Fashion-MNIST.
//
//   tar_shards_mlp --train s3://bucket/fmnist/train/ --test s3://bucket/fmnist/test/
//                  [--epochs 1] [--workers 2] [--batch-size 64] [--min-accuracy 0]
//                  [--cache-dir DIR]
//
// Prints the loss and test accuracy per epoch, and whether every training sample arrived once;
// exits 1 when the accuracy is under --min-accuracy or a sample did not arrive exactly once,
// 2 on a bad flag.
#include <mploader/mploader.h>
#include <mploader/shards/tar_shards.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

namespace {

struct Flags {
  std::string train, test, cache_dir;
  int epochs = 1;
  int64_t batch_size = 64;
  int64_t workers = 2;
  double min_accuracy = 0;
};

std::shared_ptr<mploader::shards::TarShards> open_shards(const std::string& where,
                                                         const Flags& f) {
  mploader::shards::TarShardsOptions o;
  o.keys = {"img", "cls"};
  o.int_keys = {"cls"};
  o.remote.cache_dir = f.cache_dir;  // empty: MPLOADER_CACHE_DIR, else ~/.cache/mploader
  if (!mploader::remote::is_url(where)) {
    return mploader::shards::TarShards::from_directory(where, o);
  }
  return std::make_shared<mploader::shards::TarShards>(std::vector<std::string>{where}, o);
}

at::Tensor images_of(const mploader::Batch& b) {
  return b["img"].to(at::kFloat).div_(255.0).sub_(0.2860).div_(0.3530);
}

double accuracy(torch::nn::Sequential& model, mploader::Loader& test) {
  torch::NoGradGuard no_grad;
  int64_t right = 0, total = 0;
  for (mploader::Batch& b : test) {
    right += model->forward(images_of(b)).argmax(1).eq(b["cls"]).sum().item<int64_t>();
    total += static_cast<int64_t>(b.size());
  }
  return total > 0 ? static_cast<double>(right) / static_cast<double>(total) : 0;
}

int train(const Flags& f) {
  torch::manual_seed(1);
  auto train_set = open_shards(f.train, f);
  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.shuffle = true;
  o.shuffle_buffer = 1000;
  mploader::Loader loader(train_set, o);
  mploader::LoaderOptions t = o;
  t.shuffle = false;
  mploader::Loader test(open_shards(f.test, f), t);
  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  std::printf("%zu training samples in %zu shards from %s\n", train_set->size(),
              train_set->shards().size(), f.train.c_str());
  double acc = 0;
  bool once = true;
  for (int epoch = 0; epoch < f.epochs; ++epoch) {
    loader.set_epoch(epoch);
    std::vector<int> seen(train_set->size(), 0);
    double loss_sum = 0;
    int64_t batches = 0;
    for (mploader::Batch& b : loader) {
      for (int64_t i : b.indices()) ++seen[static_cast<size_t>(i)];
      optimizer.zero_grad();
      at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(images_of(b)),
                                                             b["cls"]);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    const bool each_once = std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
    once = once && each_once;
    acc = accuracy(model, test);
    std::printf("epoch %d/%d: train loss %.4f, test accuracy %.2f %%, every sample once: %s\n",
                epoch + 1, f.epochs, loss_sum / std::max<int64_t>(batches, 1), 100 * acc,
                each_once ? "yes" : "no");
    std::fflush(stdout);
  }
  return acc >= f.min_accuracy && once ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned worker runs here and never returns
  Flags f;
  CLI::App app("Trains an MLP on Fashion-MNIST tar shards from a folder, URLs or a bucket");
  app.add_option("--train", f.train, "the training shards: a folder, a URL pattern, or an "
                 "s3:// prefix ending in /")->required();
  app.add_option("--test", f.test, "the test shards, likewise")->required();
  app.add_option("--cache-dir", f.cache_dir, "the shard cache (default: MPLOADER_CACHE_DIR, "
                 "else ~/.cache/mploader/shards)");
  app.add_option("--epochs", f.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", f.batch_size, "samples per batch")->check(CLI::PositiveNumber);
  app.add_option("--workers", f.workers, "worker processes")->check(CLI::Range(0, 256));
  app.add_option("--min-accuracy", f.min_accuracy, "exit 1 if the final test accuracy is lower")
      ->check(CLI::Range(0.0, 1.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return train(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tar_shards_mlp: %s\n", e.what());
    return 1;
  }
}
