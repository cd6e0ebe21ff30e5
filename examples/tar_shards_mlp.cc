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
#include "mlp_training.h"

#include <mploader/mploader.h>
#include <mploader/shards/tar_shards.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

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
  std::printf("%zu training samples in %zu shards from %s\n", train_set->size(),
              train_set->shards().size(), f.train.c_str());
  return examples::train_mlp(loader, train_set->size(), test, {images_of, "cls"}, f.epochs,
                             f.min_accuracy);
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
