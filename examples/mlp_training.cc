#include "mlp_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace examples {
namespace {

double accuracy(torch::nn::Sequential& model, mploader::Loader& test, const MlpBatches& io) {
  torch::NoGradGuard no_grad;
  int64_t right = 0, total = 0;
  for (mploader::Batch& b : test) {
    right += model->forward(io.inputs(b)).argmax(1).eq(b[io.label]).sum().item<int64_t>();
    total += static_cast<int64_t>(b.size());
  }
  return total > 0 ? static_cast<double>(right) / static_cast<double>(total) : 0;
}

}  // namespace

int train_mlp(mploader::Loader& train, size_t train_size, mploader::Loader& test,
              const MlpBatches& io, int epochs, double min_accuracy) {
  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  double acc = 0;
  bool once = true;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    train.set_epoch(epoch);
    std::vector<int> seen(train_size, 0);
    double loss_sum = 0;
    int64_t batches = 0;
    for (mploader::Batch& b : train) {
      for (int64_t i : b.indices()) ++seen[static_cast<size_t>(i)];
      optimizer.zero_grad();
      at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(io.inputs(b)),
                                                             b[io.label]);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    const bool each_once = std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
    once = once && each_once;
    acc = accuracy(model, test, io);
    std::printf("epoch %d/%d: train loss %.4f, test accuracy %.2f %%, every sample once: %s\n",
                epoch + 1, epochs, loss_sum / std::max<int64_t>(batches, 1), 100 * acc,
                each_once ? "yes" : "no");
    std::fflush(stdout);
  }
  return acc >= min_accuracy && once ? 0 : 1;
}

}  // namespace examples
