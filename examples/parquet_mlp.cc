// An MLP trained from Parquet shards in the layout of a Hugging Face image dataset
// (examples/fashion_mnist_to_parquet.py): each row's `image` is a struct of PNG `bytes` and a
// `path`, decoded by each worker straight into the batch; `label` is an int64 column. Workers
// are given whole row groups, and each opens the files it reads.
//
//   parquet_mlp --dir fmnist-parquet [--epochs 1] [--workers 2] [--batch-size 64]
//               [--start fork] [--min-accuracy 0]
//
// Prints the loss and test accuracy per epoch, and whether every training sample arrived once;
// exits 1 when the accuracy is under --min-accuracy or a sample did not arrive exactly once,
// 2 on a bad flag.
#include "mlp_training.h"

#include <mploader/mploader.h>
#include <mploader/parquet/parquet_shards.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

namespace {

namespace pq = mploader::parquet;
namespace vision = mploader::vision;

struct Flags {
  std::string dir;
  mploader::StartMethod start = mploader::StartMethod::kFork;
  int epochs = 1;
  int64_t batch_size = 64;
  int64_t workers = 2;
  double min_accuracy = 0;
};

// "<dir>/<split>-*.parquet", sorted.
std::shared_ptr<pq::ParquetShards> split(const std::string& dir, const std::string& name) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(name + "-", 0) == 0 && entry.path().extension() == ".parquet") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  pq::ParquetShardsOptions o;
  o.columns = {"image", "label"};
  // PNGs of 28 x 28: the whole image, as float32 [3, 28, 28] in [0, 1].
  o.image_columns.emplace("image", vision::Compose({vision::CenterCrop{{28, 28}},
                                                    vision::ToTensor{}}));
  return std::make_shared<pq::ParquetShards>(files, o);
}

at::Tensor images_of(const mploader::Batch& b) {  // one channel of the three grey ones
  return b["image"].select(1, 0).flatten(1).sub(0.2860).div_(0.3530);
}

int train(const Flags& f) {
  torch::manual_seed(1);
  auto train_set = split(f.dir, "train");
  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.shuffle = true;
  o.shuffle_buffer = 2048;
  o.start_method = f.start;
  mploader::Loader loader(train_set, o);
  mploader::LoaderOptions t = o;
  t.shuffle = false;
  t.shuffle_buffer = 0;
  mploader::Loader test(split(f.dir, "test"), t);
  std::printf("%zu training samples in %zu row groups of %zu files in %s; image: %s\n",
              train_set->size(), train_set->shards().size(), train_set->files().size(),
              f.dir.c_str(), train_set->columns()[0].read_path.c_str());
  return examples::train_mlp(loader, train_set->size(), test, {images_of, "label"}, f.epochs,
                             f.min_accuracy);
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned worker runs here and never returns
  Flags f;
  CLI::App app("Trains an MLP on Fashion-MNIST from Parquet shards of PNG images");
  app.add_option("--dir", f.dir, "the folder of train-*.parquet and test-*.parquet "
                 "(examples/fashion_mnist_to_parquet.py writes it)")->required();
  app.add_option("--epochs", f.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", f.batch_size, "samples per batch")->check(CLI::PositiveNumber);
  app.add_option("--workers", f.workers, "worker processes")->check(CLI::Range(0, 256));
  const std::map<std::string, mploader::StartMethod> starts{
      {"fork", mploader::StartMethod::kFork}, {"spawn", mploader::StartMethod::kSpawn},
      {"forkserver", mploader::StartMethod::kForkserver}};
  app.add_option("--start", f.start, "how workers start: fork, spawn or forkserver")
      ->transform(CLI::CheckedTransformer(starts, CLI::ignore_case));
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
    std::fprintf(stderr, "parquet_mlp: %s\n", e.what());
    return 1;
  }
}
