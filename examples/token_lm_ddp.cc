// A language model trained data-parallel from a token file, fed by mploader::TokenStream: each
// rank is a process with its own Loader (worker processes) over its share of the corpus's
// shards; gradients are averaged over c10d's Gloo group at every step. The corpus is the text
// files of a folder (default /usr/share/common-licenses, on every Debian system) as byte
// tokens, written once as a nanoGPT-style uint16 train.bin and val.bin.
//
// Each epoch the ranks prove what the streaming loader promises: they take the same number of
// steps, and together they deliver every training window of the epoch (a window twice only in
// the batches a short rank repeats). Rank 0 prints the loss and the validation loss in bits
// per byte; --max-val-bits makes a model that did not learn an error (exit 1).
//
//   token_lm_ddp [--world-size 2] [--workers 2] [--epochs 1] [--context 64] [--batch-size 16]
//                [--corpus DIR] [--cache DIR] [--max-val-bits 0]
#include "gloo_ranks.h"

#include <mploader/mploader.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

struct Flags {
  std::string corpus = "/usr/share/common-licenses";
  std::string cache;  // default: $MPLOADER_EXAMPLE_CACHE, else /tmp/mploader-token-lm
  int world_size = 2;
  int64_t workers = 2;  // per rank
  int epochs = 1;
  int64_t context = 64;
  int64_t batch_size = 16;  // per rank
  int64_t shuffle_buffer = 32;
  double lr = 3e-3;
  double max_val_bits = 0;  // 0: no check
  uint64_t seed = 1;
  int timeout_s = 600;
};

std::string cache_dir(const Flags& f) {
  if (!f.cache.empty()) return f.cache;
  if (const char* c = std::getenv("MPLOADER_EXAMPLE_CACHE"); c != nullptr && *c != '\0') return c;
  return "/tmp/mploader-token-lm";
}

void write_ids(const fs::path& path, const std::string& bytes, size_t begin, size_t end) {
  std::vector<uint16_t> ids(bytes.begin() + begin, bytes.begin() + end);
  for (uint16_t& id : ids) id &= 0xff;  // a char may be signed
  const fs::path tmp = path.string() + ".tmp" + std::to_string(getpid());
  std::ofstream(tmp, std::ios::binary)
      .write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * 2));
  fs::rename(tmp, path);  // whole or absent, even with ranks racing
}

// The corpus's files in name order, as byte tokens: the first 90 % train.bin, the rest val.bin.
void make_token_files(const Flags& f, const fs::path& dir) {
  if (fs::exists(dir / "train.bin") && fs::exists(dir / "val.bin")) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(f.corpus)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.size() < 1000) {
    throw std::runtime_error("--corpus " + f.corpus + " holds " + std::to_string(text.size()) +
                             " bytes of text; give a folder with at least 1,000");
  }
  fs::create_directories(dir);
  const size_t split = text.size() * 9 / 10;
  write_ids(dir / "train.bin", text, 0, split);
  write_ids(dir / "val.bin", text, split, text.size());
}

// Byte embeddings, two causal convolutions (each position sees the 7 bytes before it), and a
// projection back to the 256 byte values.
struct ByteLmImpl : torch::nn::Module {
  ByteLmImpl()
      : embed(register_module("embed", torch::nn::Embedding(256, 128))),
        conv1(register_module("conv1", torch::nn::Conv1d(torch::nn::Conv1dOptions(128, 192, 4)))),
        conv2(register_module("conv2", torch::nn::Conv1d(torch::nn::Conv1dOptions(192, 192, 4)))),
        out(register_module("out", torch::nn::Linear(192, 256))) {}
  // tokens [B, T] -> logits [B, T, 256]
  at::Tensor forward(const at::Tensor& tokens) {
    at::Tensor x = embed(tokens).transpose(1, 2);              // [B, 128, T]
    x = torch::gelu(conv1(torch::constant_pad_nd(x, {3, 0})));  // left padding: causal
    x = torch::gelu(conv2(torch::constant_pad_nd(x, {3, 0})));
    return out(x.transpose(1, 2));
  }
  torch::nn::Embedding embed;
  torch::nn::Conv1d conv1, conv2;
  torch::nn::Linear out;
};
TORCH_MODULE(ByteLm);

at::Tensor lm_loss(ByteLm& model, const at::Tensor& input, const at::Tensor& target) {
  return torch::nn::functional::cross_entropy(model->forward(input).reshape({-1, 256}),
                                              target.reshape({-1}));
}

// Mean loss in bits per byte over the first 256 windows of val.bin, read without workers.
double validation_bits(ByteLm& model, mploader::TokenStream& val) {
  torch::NoGradGuard no_grad;
  const int64_t n = std::min<int64_t>(256, static_cast<int64_t>(val.size()));
  std::vector<at::Tensor> inputs, targets;
  for (int64_t i = 0; i < n; ++i) {
    const mploader::Sample s = val.get(i);
    inputs.push_back(s["input"]);
    targets.push_back(s["target"]);
  }
  return lm_loss(model, torch::stack(inputs), torch::stack(targets)).item<double>() / std::log(2.0);
}

struct EpochResult {
  double loss_sum = 0;
  int64_t steps = 0;
  at::Tensor seen;  // per window of the epoch, how often this rank delivered it
};

EpochResult train_epoch(mploader::Loader& loader, ByteLm& model, torch::optim::Optimizer& opt,
                        c10d::ProcessGroupGloo& group, int64_t world, int64_t windows) {
  EpochResult r;
  r.seen = at::zeros({windows}, at::kLong);
  for (mploader::Batch& b : loader) {
    opt.zero_grad();
    at::Tensor loss = lm_loss(model, b["input"], b["target"]);
    loss.backward();
    examples::average_gradients(*model, group, world);
    opt.step();
    r.loss_sum += loss.item<double>();
    ++r.steps;
    for (int64_t i : b.indices()) r.seen[i] += 1;
  }
  return r;
}

int run_rank(const Flags& f, const mploader::LaunchInfo& launch) {
  torch::set_num_threads(1);  // ranks and their workers share the machine's cores
  const fs::path dir = cache_dir(f);
  make_token_files(f, dir);
  mploader::TokenStreamOptions to;
  to.context = f.context;
  to.vocab_size = 256;
  to.windows_per_shard = 32;
  auto train = std::make_shared<mploader::TokenStream>(
      std::vector<std::string>{(dir / "train.bin").string()}, to);
  mploader::TokenStream val({(dir / "val.bin").string()}, to);
  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.shuffle = true;
  o.shuffle_buffer = f.shuffle_buffer;
  o.seed = f.seed;
  o.persistent_workers = true;  // forked now, before Gloo starts its threads
  o.world_size = launch.world_size;
  o.rank = launch.rank;
  o.timeout = std::chrono::seconds(60);
  mploader::Loader loader(train, o);
  auto group = examples::connect(launch);

  torch::manual_seed(static_cast<int64_t>(f.seed));
  ByteLm model;
  examples::broadcast_parameters(*model, *group);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(f.lr));
  if (launch.rank == 0) {
    std::printf("byte-level LM (conv, %lld parameters) on %lld ranks (c10d Gloo): %zu windows of "
                "%lld tokens in %zu shards, batch %lld per rank, %lld workers per rank, "
                "%.2f bits per byte before training\n",
                static_cast<long long>(examples::flatten(model->parameters()).numel()),
                static_cast<long long>(launch.world_size), train->size(),
                static_cast<long long>(f.context), train->shards().size(),
                static_cast<long long>(f.batch_size), static_cast<long long>(f.workers),
                validation_bits(model, val));
  }
  double bits = 0;
  for (int epoch = 0; epoch < f.epochs; ++epoch) {
    loader.set_epoch(epoch);
    mploader::verify_ranks_agree(*group, loader.rank_agreement(), examples::kCollectiveTimeout);
    EpochResult r = train_epoch(loader, model, opt, *group, launch.world_size,
                                static_cast<int64_t>(train->size()));
    at::Tensor steps = at::tensor({r.steps}, at::kLong), most = steps.clone();
    examples::allreduce(*group, steps, c10d::ReduceOp::MIN);
    examples::allreduce(*group, most, c10d::ReduceOp::MAX);
    examples::allreduce(*group, r.seen);
    at::Tensor loss = at::tensor({r.loss_sum}, at::kDouble);
    examples::allreduce(*group, loss);
    bits = validation_bits(model, val);
    const bool equal = steps.item<int64_t>() == most.item<int64_t>();
    const bool covered = r.seen.min().item<int64_t>() >= 1;
    if (launch.rank == 0) {
      std::printf("epoch %d/%d: train loss %.4f, validation %.3f bits per byte; %lld steps on "
                  "every rank: %s; every window delivered: %s (%lld deliveries for %zu "
                  "windows)\n",
                  epoch + 1, f.epochs, loss.item<double>() / (r.steps * launch.world_size), bits,
                  static_cast<long long>(r.steps), equal ? "yes" : "NO", covered ? "yes" : "NO",
                  static_cast<long long>(r.seen.sum().item<int64_t>()), train->size());
      std::fflush(stdout);
    }
    if (!equal || !covered) return 1;
  }
  if (!examples::replicas_identical(*model, *group)) {
    std::fprintf(stderr, "rank %lld: parameters differ between ranks\n",
                 static_cast<long long>(launch.rank));
    return 1;
  }
  if (launch.rank == 0 && f.max_val_bits > 0 && bits > f.max_val_bits) {
    std::fprintf(stderr, "validation %.3f bits per byte is above --max-val-bits %.3f\n", bits,
                 f.max_val_bits);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned mploader worker runs here and never returns
  Flags f;
  CLI::App app("Data-parallel byte-level language model over c10d Gloo, fed by TokenStream");
  app.add_option("--corpus", f.corpus, "folder of text files to train on");
  app.add_option("--cache", f.cache, "folder for train.bin and val.bin");
  app.add_option("--world-size", f.world_size, "ranks the launcher starts")->check(CLI::Range(1, 64));
  app.add_option("--workers", f.workers, "mploader workers per rank")->check(CLI::Range(0, 256));
  app.add_option("--epochs", f.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--context", f.context, "tokens per window")->check(CLI::Range(2, 65536));
  app.add_option("--batch-size", f.batch_size, "windows per batch and rank")
      ->check(CLI::PositiveNumber);
  app.add_option("--shuffle-buffer", f.shuffle_buffer, "windows each worker shuffles through")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--lr", f.lr, "Adam's learning rate")->check(CLI::PositiveNumber);
  app.add_option("--max-val-bits", f.max_val_bits, "exit 1 if validation ends above this")
      ->check(CLI::Range(0.0, 16.0));
  app.add_option("--seed", f.seed, "seed of the weights and the shuffling");
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
    if (launch.launcher == "none") {
      make_token_files(f, cache_dir(f));  // once, before the ranks
      return examples::launch_ranks(f.world_size, f.timeout_s, argv);
    }
    who = "rank " + std::to_string(launch.rank);
    return run_rank(f, launch);
  } catch (const std::exception& e) {  // a bad corpus or token file names itself; c10d says why
    std::fprintf(stderr, "token_lm_ddp %s: %s\n", who.c_str(), e.what());
    return 1;
  }
}
