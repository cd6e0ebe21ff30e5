// An image classifier trained from a folder of JPEGs with mploader's components alone: Fashion-
// MNIST written once as JPEG files in class folders, read back by mploader::vision::ImageFolder
// with torchvision-style augmentation, and a small CNN trained on the batches. Prints the loss
// and test accuracy per epoch; exits 1 when the last epoch's accuracy is under --min-accuracy,
// 2 on a bad flag or unreadable data.
//
//   image_folder_cnn [--fmnist-dir DIR] [--cache DIR] [--epochs 3] [--limit 0] [--workers 2]
//                    [--batch-size 64] [--min-accuracy 0]
//
// The folder is made under --cache (default $MPLOADER_EXAMPLE_CACHE, else
// $XDG_CACHE_HOME/mploader-examples, else ~/.cache/mploader-examples), as
// fashion-mnist-jpeg[-<limit>]/{train,test}/<class>/<n>.jpg; it is written into a temporary
// sibling and renamed into place, so an interrupted run leaves no half folder.
#include "fashion_mnist.h"

#include <mploader/mploader.h>
#include <mploader/vision/encode.h>
#include <mploader/vision/image_folder.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mploader::vision;

namespace {

const char* const kClasses[10] = {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle_boot"};

struct Flags {
  std::string fmnist_dir = examples::kFashionMnistDir;
  std::string cache;
  int epochs = 3;
  int64_t limit = 0;  // training images used (a sixth as many test images); 0: all
  int64_t workers = 2;
  int64_t batch_size = 64;
  double min_accuracy = 0;
};

std::string default_cache() {
  if (const char* c = std::getenv("MPLOADER_EXAMPLE_CACHE"); c != nullptr && *c != '\0') return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/mploader-examples";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/mploader-examples";
}

// Writes the first `count` images of `split` as <dir>/<class>/<n>.jpg (grey, quality 95).
void write_split(const examples::FashionMnistSplit& split, int64_t count, const fs::path& dir) {
  for (const char* name : kClasses) fs::create_directories(dir / name);
  const at::Tensor images = split.images.contiguous();
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<uint8_t> jpeg =
        encode_jpeg(images[i].data_ptr<uint8_t>(), 28, 28, 1, 95);
    const fs::path file = dir / kClasses[split.labels[i].item<int64_t>()] /
                          (std::to_string(i) + ".jpg");
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
    if (!out) throw std::runtime_error("cannot write " + file.string() + ": is the disk full?");
  }
}

// The folder of train/ and test/, made once.
fs::path ensure_image_folder(const Flags& f) {
  const fs::path root = fs::path(f.cache) / ("fashion-mnist-jpeg" +
                                             (f.limit > 0 ? "-" + std::to_string(f.limit) : ""));
  if (fs::is_directory(root)) return root;
  const examples::FashionMnistSplit train = examples::read_fashion_mnist(f.fmnist_dir, "train");
  const examples::FashionMnistSplit test = examples::read_fashion_mnist(f.fmnist_dir, "t10k");
  const int64_t train_count = f.limit > 0 ? std::min(f.limit, train.labels.size(0))
                                          : train.labels.size(0);
  const int64_t test_count = f.limit > 0 ? std::min(std::max<int64_t>(f.limit / 6, 1),
                                                    test.labels.size(0))
                                         : test.labels.size(0);
  const fs::path temporary = root.string() + ".tmp-" + std::to_string(getpid());
  std::printf("writing %lld + %lld JPEGs into %s\n", static_cast<long long>(train_count),
              static_cast<long long>(test_count), root.c_str());
  fs::remove_all(temporary);
  write_split(train, train_count, temporary / "train");
  write_split(test, test_count, temporary / "test");
  std::error_code ec;
  fs::rename(temporary, root, ec);  // another run may have won the race: its folder is as good
  if (ec) fs::remove_all(temporary);
  return root;
}

// conv 3->16, pool, conv 16->32, pool, 1568 -> 128 -> 10.
torch::nn::Sequential make_cnn() {
  namespace nn = torch::nn;
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(3, 16, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
      nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
      nn::Flatten(), nn::Linear(32 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
}

mploader::LoaderOptions loader_options(const Flags& f, bool shuffle) {
  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.shuffle = shuffle;
  o.seed = 1;
  return o;
}

double evaluate(torch::nn::Sequential& model, mploader::Loader& test) {
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t right = 0, seen = 0;
  for (mploader::Batch& b : test) {
    right += model->forward(b["image"]).argmax(1).eq(b["label"]).sum().item<int64_t>();
    seen += static_cast<int64_t>(b.size());
  }
  model->train();
  return seen > 0 ? static_cast<double>(right) / static_cast<double>(seen) : 0;
}

int train(const Flags& f) {
  torch::manual_seed(1);
  const fs::path root = ensure_image_folder(f);
  const Normalize normalize({0.286, 0.286, 0.286}, {0.353, 0.353, 0.353});
  auto train_set = std::make_shared<ImageFolder>(
      (root / "train").string(),
      Compose({RandomResizedCrop(28, {0.8, 1.0}), RandomHorizontalFlip(), ToTensor(), normalize}));
  auto test_set = std::make_shared<ImageFolder>((root / "test").string(),
                                                Compose({CenterCrop(28), ToTensor(), normalize}));
  mploader::Loader train_loader(train_set, loader_options(f, true));
  mploader::Loader test_loader(test_set, loader_options(f, false));
  torch::nn::Sequential model = make_cnn();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  std::printf("ImageFolder %s: %zu training and %zu test images, %zu classes, %lld workers\n",
              root.c_str(), train_set->size(), test_set->size(), train_set->classes().size(),
              static_cast<long long>(f.workers));
  double accuracy = 0;
  for (int epoch = 0; epoch < f.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t batches = 0;
    for (mploader::Batch& b : train_loader) {
      optimizer.zero_grad();
      at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(b["image"]), b["label"]);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    accuracy = evaluate(model, test_loader);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("epoch %d/%d: train loss %.4f, test accuracy %.2f %%, %.1f s\n", epoch + 1,
                f.epochs, loss_sum / static_cast<double>(std::max<int64_t>(batches, 1)),
                100 * accuracy, seconds);
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
  mploader::init(argc, argv);
  Flags f;
  CLI::App app("A CNN trained on Fashion-MNIST as a folder of JPEGs, through mploader::vision");
  app.add_option("--fmnist-dir", f.fmnist_dir, "Fashion-MNIST's IDX files")->capture_default_str();
  app.add_option("--cache", f.cache, "where the JPEG folder is made (default: see the source)");
  app.add_option("--epochs", f.epochs)->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--limit", f.limit, "training images (a sixth as many test images); 0: all")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  app.add_option("--workers", f.workers)->check(CLI::Range(int64_t{0}, int64_t{64}))->capture_default_str();
  app.add_option("--batch-size", f.batch_size)->check(CLI::Range(int64_t{1}, int64_t{65536}))->capture_default_str();
  app.add_option("--min-accuracy", f.min_accuracy, "exit 1 below this test accuracy (0-1)")
      ->check(CLI::Range(0.0, 1.0));
  CLI11_PARSE(app, argc, argv);
  if (f.cache.empty()) f.cache = default_cache();
  try {
    return train(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "image_folder_cnn: %s\n", e.what());
    return 2;
  }
}
