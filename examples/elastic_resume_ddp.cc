// A data-parallel job that changes size mid-epoch: 4 ranks (c10d Gloo) train a linear model on
// a synthetic regression dataset through mploader with a DistributedSampler, and checkpoint
// after a few steps: the model, and the job's loader state gathered over the group
// (gather_loader_state). The job then restarts on 2 ranks, which load both and finish the
// epoch. Each rank writes down the samples it trained on; at the end the launcher counts them:
// every sample of the epoch exactly once across the two runs, and equal steps on the ranks of
// each run. It prints the counts; a miss or a repeat is exit status 1.
//
//   elastic_resume_ddp [--from 4] [--to 2] [--stop-after 6] [--samples 1000] [--workers 2]
//                      [--dir DIR]
#include "gloo_ranks.h"

#include <mploader/mploader.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace {

struct Flags {
  int from = 4;             // ranks of the first run
  int to = 2;               // ranks it resumes on
  int64_t stop_after = 6;   // steps of the first run before its checkpoint
  int64_t samples = 1000;
  int64_t workers = 2;      // per rank
  int64_t batch_size = 16;  // per rank
  uint64_t epoch = 3;
  std::string dir;  // default: a fresh folder under /tmp
  int phase = 0;    // 1 or 2 in the ranks; 0 in the launcher
  int timeout_s = 240;
};

// y = x . w_true + 0.5, with x drawn per index: the data is the same in every process.
class Regression : public mploader::Dataset {
 public:
  explicit Regression(int64_t n) : n_(n) {}
  size_t size() const override { return static_cast<size_t>(n_); }
  mploader::Sample get(int64_t index) override {
    at::Generator g = at::detail::createCPUGenerator(static_cast<uint64_t>(index));
    at::Tensor x = at::randn({8}, g);
    at::Tensor y = (x * at::arange(1, 9, at::kFloat)).sum().reshape({1}) + 0.5;
    return {{"x", x}, {"y", y}, {"index", at::scalar_tensor(index, at::kLong)}};
  }

 private:
  int64_t n_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One run's ranks: train until the epoch ends (or phase 1's checkpoint), write what was seen.
int run_rank(const Flags& f, const mploader::LaunchInfo& launch) {
  mploader::LoaderOptions o;
  o.batch_size = f.batch_size;
  o.num_workers = f.workers;
  o.persistent_workers = true;  // forked now, before Gloo starts its threads
  o.sampler = std::make_shared<mploader::DistributedSampler>(launch.world_size, launch.rank,
                                                             /*shuffle=*/true, /*seed=*/11);
  o.timeout = std::chrono::seconds(60);
  mploader::Loader loader(std::make_shared<Regression>(f.samples), o);
  auto group = examples::connect(launch);
  torch::nn::Linear model(8, 1);
  const fs::path dir(f.dir);
  if (f.phase == 1) {
    examples::broadcast_parameters(*model, *group);
    loader.set_epoch(f.epoch);
  } else {
    torch::load(model, (dir / "model.pt").string());
    loader.load_state_dict(read_file(dir / "loader.json"));
  }
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05));
  std::ofstream seen(dir / ("seen-" + std::to_string(f.phase) + "-" +
                            std::to_string(launch.rank) + ".txt"));
  int64_t steps = 0;
  double last_loss = 0;
  while (f.phase == 2 || steps < f.stop_after) {
    std::optional<mploader::Batch> batch = loader.next();
    if (!batch) break;
    opt.zero_grad();
    at::Tensor loss = torch::mse_loss(model((*batch)["x"]), (*batch)["y"]);
    loss.backward();
    examples::average_gradients(*model, *group, launch.world_size);
    opt.step();
    last_loss = loss.item<double>();
    for (int64_t index : batch->indices()) seen << index << '\n';
    ++steps;
  }
  seen.close();
  // The checkpoint: every rank's loader state, merged into the job's, and the model.
  const std::string job = mploader::gather_loader_state(*group, loader.state_dict(),
                                                        examples::kCollectiveTimeout);
  at::Tensor fewest = at::tensor({steps}, at::kLong), most = fewest.clone();
  examples::allreduce(*group, fewest, c10d::ReduceOp::MIN);
  examples::allreduce(*group, most, c10d::ReduceOp::MAX);
  if (launch.rank == 0) {
    if (f.phase == 1) {
      std::ofstream(dir / "loader.json") << job;
      torch::save(model, (dir / "model.pt").string());
    }
    const mploader::JobStateSummary s = mploader::summarize_job_state(job);
    std::printf("run %d on %lld ranks: %lld to %lld steps per rank, last loss %.4f; the job "
                "state says %llu of %llu samples of epoch %llu delivered\n",
                f.phase, static_cast<long long>(launch.world_size),
                static_cast<long long>(fewest.item<int64_t>()),
                static_cast<long long>(most.item<int64_t>()),
                last_loss,
                static_cast<unsigned long long>(s.delivered),
                static_cast<unsigned long long>(s.positions),
                static_cast<unsigned long long>(s.epoch));
    std::fflush(stdout);
  }
  return fewest.item<int64_t>() == most.item<int64_t>() ? 0 : 1;
}

// The ranks' records of both runs: how many samples each run trained on, and how often each.
int count_samples(const Flags& f) {
  std::map<int64_t, int> times;
  int64_t per_run[3] = {0, 0, 0};
  for (int phase = 1; phase <= 2; ++phase) {
    for (int rank = 0; rank < (phase == 1 ? f.from : f.to); ++rank) {
      std::ifstream in(fs::path(f.dir) /
                       ("seen-" + std::to_string(phase) + "-" + std::to_string(rank) + ".txt"));
      for (int64_t index = 0; in >> index;) {
        ++times[index];
        ++per_run[phase];
      }
    }
  }
  int64_t once = 0, repeated = 0;
  for (const auto& [index, n] : times) (n == 1 ? once : repeated) += 1;
  const int64_t missing = f.samples - static_cast<int64_t>(times.size());
  std::printf("%lld samples on %d ranks, then %lld on %d ranks: %lld of %lld samples exactly "
              "once, %lld more than once, %lld never\n",
              static_cast<long long>(per_run[1]), f.from, static_cast<long long>(per_run[2]),
              f.to, static_cast<long long>(once), static_cast<long long>(f.samples),
              static_cast<long long>(repeated), static_cast<long long>(missing));
  return once == f.samples ? 0 : 1;
}

// Runs the ranks of one run as copies of this program.
int launch_run(const Flags& f, int phase, char* program) {
  std::vector<std::string> args{program, "--phase", std::to_string(phase), "--dir", f.dir,
                                "--from", std::to_string(f.from), "--to", std::to_string(f.to),
                                "--stop-after", std::to_string(f.stop_after),
                                "--samples", std::to_string(f.samples),
                                "--workers", std::to_string(f.workers)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return examples::launch_ranks(phase == 1 ? f.from : f.to, f.timeout_s, argv.data());
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);  // a spawned mploader worker runs here and never returns
  Flags f;
  CLI::App app("A data-parallel job checkpointed on one number of ranks, resumed on another");
  app.add_option("--from", f.from, "ranks of the first run")->check(CLI::Range(1, 64));
  app.add_option("--to", f.to, "ranks that resume it")->check(CLI::Range(1, 64));
  app.add_option("--stop-after", f.stop_after, "steps before the checkpoint")
      ->check(CLI::PositiveNumber);
  app.add_option("--samples", f.samples, "dataset size")->check(CLI::Range(16, 10000000));
  app.add_option("--workers", f.workers, "workers per rank")->check(CLI::Range(0, 64));
  app.add_option("--dir", f.dir, "where the checkpoint and the records go");
  app.add_option("--phase", f.phase, "(internal) which run a rank belongs to");
  app.add_option("--timeout", f.timeout_s, "seconds each run may take");
  CLI11_PARSE(app, argc, argv);
  try {
    const mploader::LaunchInfo launch = mploader::launch_info_from_env();
    if (f.phase != 0) return run_rank(f, launch);
    if (f.dir.empty()) f.dir = (fs::temp_directory_path() /
                                ("mploader-elastic-" + std::to_string(getpid()))).string();
    fs::remove_all(f.dir);
    fs::create_directories(f.dir);
    if (const int status = launch_run(f, 1, argv[0]); status != 0) return status;
    if (const int status = launch_run(f, 2, argv[0]); status != 0) return status;
    return count_samples(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "elastic_resume_ddp: %s\n", e.what());
    return 2;
  }
}
