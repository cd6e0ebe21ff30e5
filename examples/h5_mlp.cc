// An MLP trained from an HDF5 file that h5py wrote (examples/fashion_mnist_to_h5.py): the
// training and test splits are H5Datasets over /train/* and /test/*, read by worker processes
// that each open the file themselves.
//
//   h5_mlp --file fmnist.h5 [--epochs 1] [--workers 2] [--batch-size 64] [--start fork]
//          [--min-accuracy 0]
//
// Prints the loss and test accuracy per epoch, and whether every training sample arrived once;
// exits 1 when the accuracy is under --min-accuracy or a sample did not arrive exactly once,
// 2 on a bad flag.
#include "mlp_training.h"

#include <mploader/hdf5/h5_dataset.h>
#include <mploader/mploader.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <map>

namespace {

struct Flags {
  std::string file;
  mploader::StartMethod start = mploader::StartMethod::kFork;
  int epochs = 1;
  int64_t batch_size = 64;
  int64_t workers = 2;
  double min_accuracy = 0;
};

std::shared_ptr<mploader::hdf5::H5Dataset> split(const std::string& file,
                                                 const std::string& name) {
  return std::make_shared<mploader::hdf5::H5Dataset>(
      file, std::vector<mploader::hdf5::H5Field>{{"image", "/" + name + "/images"},
                                                 {"label", "/" + name + "/labels"}});
}

at::Tensor images_of(const mploader::Batch& b) {
  return b["image"].flatten(1).to(at::kFloat).div_(255.0).sub_(0.2860).div_(0.3530);
}

int train(const Flags& f) {
  torch::manual_seed(1);
  auto train_set = split(f.file, "train");
  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.shuffle = true;
  o.start_method = f.start;
  mploader::Loader loader(train_set, o);
  mploader::LoaderOptions t = o;
  t.shuffle = false;
  mploader::Loader test(split(f.file, "test"), t);
  const auto& images = train_set->fields()[0];
  std::printf("%zu training samples from %s (%s, chunks of %lld rows, %s)\n", train_set->size(),
              f.file.c_str(), images.file_type.c_str(),
              static_cast<long long>(images.chunk.empty() ? 0 : images.chunk[0]),
              images.filters.empty() ? "uncompressed" : images.filters[0].c_str());
  return examples::train_mlp(loader, train_set->size(), test, {images_of, "label"}, f.epochs,
                             f.min_accuracy);
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned worker runs here and never returns
  Flags f;
  CLI::App app("Trains an MLP on Fashion-MNIST from an HDF5 file written by h5py");
  app.add_option("--file", f.file, "the HDF5 file (examples/fashion_mnist_to_h5.py writes it)")
      ->required();
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
    std::fprintf(stderr, "h5_mlp: %s\n", e.what());
    return 1;
  }
}
