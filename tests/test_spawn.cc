// start_method spawn: workers are this test binary run again (see test_main.cc), rebuilding
// their datasets from registered factories. Same batches as fork; nothing inherited; every
// reason spawn cannot work is an error at construction.
#include "core/recipes.h"
#include "crash_test_support.h"
#include "worker/worker_spec.h"

#include <mploader/registry.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>

namespace test_spawn {

using namespace mploader;
using testing_datasets::CountingDataset;
using testing_datasets::FaultyDataset;

namespace {

int g_marker = 0;  // set in the test process; a spawned worker starts with 0

// Reports g_marker as seen by the worker that loads the sample, and the worker's parent.
class MarkerDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    Sample s = CountingDataset::get(index);
    s.set("marker", at::scalar_tensor(int64_t{g_marker}, at::kLong));
    s.set("parent", at::scalar_tensor(int64_t{getppid()}, at::kLong));
    return s;
  }
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"marker", std::to_string(size())};
  }
};

MPLOADER_REGISTER_DATASET("counting", [](const std::string& config) {
  return std::make_shared<CountingDataset>(std::stoul(config));
});
MPLOADER_REGISTER_DATASET("marker", [](const std::string& config) {
  return std::make_shared<MarkerDataset>(std::stoul(config));
});
MPLOADER_REGISTER_DATASET("faulty", [](const std::string& config) {
  std::istringstream in(config);
  size_t n;
  int64_t bad;
  int fault, signal;
  in >> n >> bad >> fault >> signal;
  return std::make_shared<FaultyDataset>(n, bad, static_cast<FaultyDataset::Fault>(fault),
                                         signal);
});
MPLOADER_REGISTER_DATASET("broken", [](const std::string&) -> std::shared_ptr<Dataset> {
  throw std::runtime_error("the data directory is not mounted");
});

// A recipe of 10 MB: a size and bytes the factory checks one by one, as a dataset carrying a
// large file list or vocabulary in its recipe would. A worker that got them otherwise fails.
constexpr size_t kBigRecipeBytes = size_t{10} << 20;

std::string big_payload(size_t n) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 31 + i / 251) % 256);
  return out;
}

class BigRecipeDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"big-recipe",
                         std::to_string(size()) + " " + big_payload(kBigRecipeBytes)};
  }
};

// The line of /proc/self/maps whose range holds `address` ("" when none does).
std::string mapping_holding(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream in(line);
    in >> std::hex >> from >> dash >> to;
    if (in && from <= at && at < to) return line;
  }
  return "";
}

// Mappings of this process whose name holds `label`.
int mappings_named(const std::string& label) {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) count += line.find(label) != std::string::npos;
  return count;
}

// Reads its recipe where the worker mapped it: a recipe in the worker's own memory (read, or
// copied) fails the batch, so the test sees it.
const bool big_recipe_registered =
    (mploader::detail::register_dataset_view("big-recipe", [](std::string_view config) {
       const std::string where = mapping_holding(config.data());
       if (where.find("mploader-dataset-recipe") == std::string::npos) {
         throw std::runtime_error("the recipe is not in its shared memory but in '" + where + "'");
       }
       const size_t space = config.find(' ');
       if (config.substr(space + 1) != big_payload(kBigRecipeBytes)) {
         throw std::runtime_error("the recipe arrived with " +
                                  std::to_string(config.size() - space - 1) + " bytes, not the " +
                                  std::to_string(kBigRecipeBytes) + " sent");
       }
       return std::make_shared<BigRecipeDataset>(std::stoul(std::string(config.substr(0, space))));
     }),
     true);

// A recipe with two memfds beside it, as a Python dataset holding SharedDicts has: the factory
// finds them in recipe_descriptors(), keeps a copy of one, and the worker closes the rest.
constexpr const char* kAttachedLabel = "test-attached-memory";

std::shared_ptr<const std::vector<ipc::UniqueFd>> attached_memory() {
  auto fds = std::make_shared<std::vector<ipc::UniqueFd>>();
  for (const char* text : {"first", "second"}) {
    auto sealed = ipc::SealedBytes::create(text, kAttachedLabel);
    fds->emplace_back(fcntl(sealed.value()->fd(), F_DUPFD_CLOEXEC, 0));
  }
  return fds;
}

std::string read_whole(int fd) {
  char buffer[16] = {};
  const ssize_t n = pread(fd, buffer, sizeof buffer, 0);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
}

// Descriptors of this process that are the attached memory.
int open_attached() {
  int count = 0;
  for (int fd = 0; fd < 1024; ++fd) {
    char path[64], target[256] = {};
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (readlink(path, target, sizeof target - 1) > 0) {
      count += std::string_view(target).find(kAttachedLabel) != std::string_view::npos;
    }
  }
  return count;
}

class AttachedDataset : public CountingDataset, public mploader::detail::SharedRecipeSource {
 public:
  // In the main process: the memory to hand over. In a worker: the copy its factory kept.
  explicit AttachedDataset(size_t n) : CountingDataset(n), attached_(attached_memory()) {}
  AttachedDataset(size_t n, int kept) : CountingDataset(n), kept_(kept) {}
  ~AttachedDataset() override { if (kept_ >= 0) close(kept_); }
  std::string recipe_factory() const override { return "attached"; }
  std::shared_ptr<const ipc::SealedBytes> recipe_config() const override {
    return ipc::SealedBytes::create(std::to_string(size()), "test-recipe").take();
  }
  std::shared_ptr<const std::vector<ipc::UniqueFd>> recipe_descriptors() const override {
    return attached_;
  }
  // In the worker: the copy it kept still reads, and no other attached descriptor is open.
  Sample get(int64_t index) override {
    Sample s = CountingDataset::get(index);
    s.set("kept", at::scalar_tensor(int64_t{read_whole(kept_) == "first"}, at::kLong));
    s.set("open", at::scalar_tensor(int64_t{open_attached()}, at::kLong));
    return s;
  }

 private:
  int kept_ = -1;
  std::shared_ptr<const std::vector<ipc::UniqueFd>> attached_;
};

const bool attached_registered =
    (mploader::detail::register_dataset_view("attached", [](std::string_view config) {
       const std::vector<int>& fds = mploader::detail::recipe_descriptors();
       if (fds.size() != 2 || read_whole(fds[0]) != "first" || read_whole(fds[1]) != "second") {
         throw std::runtime_error("the descriptors beside the recipe did not arrive");
       }
       return std::make_shared<AttachedDataset>(std::stoul(std::string(config)),
                                                fcntl(fds[0], F_DUPFD_CLOEXEC, 0));
     }),
     true);

class BrokenRecipeDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  std::optional<DatasetRecipe> recipe() const override { return DatasetRecipe{"broken", ""}; }
};

class NoRecipeDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  std::optional<DatasetRecipe> recipe() const override { return std::nullopt; }
};

LoaderOptions spawn_options() {
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 10;
  o.start_method = StartMethod::kSpawn;
  o.crash_dir = crash_testing::fresh_dir();
  return o;
}

std::string option_error(std::shared_ptr<Dataset> data, LoaderOptions o) {
  try {
    Loader loader(std::move(data), o);
  } catch (const OptionError& e) {
    return e.option() + ": " + e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("spawn: the same batches as fork, from workers that inherited nothing",
          "[spawn][process]") {
  g_marker = 42;
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn, StartMethod::kForkserver}) {
    INFO("start method " << static_cast<int>(method));
    auto o = spawn_options();
    o.start_method = method;
    o.shuffle = true;
    Loader loader(std::make_shared<MarkerDataset>(301), o);
    std::vector<int64_t> labels;
    for (Batch& b : loader) {
      for (size_t i = 0; i < b.size(); ++i) {
        REQUIRE(b["label"][i].item<int64_t>() == b.indices()[i]);
        REQUIRE(b["x"][i][2].item<float>() == static_cast<float>(b.indices()[i]));
        REQUIRE(b["marker"][i].item<int64_t>() == (method == StartMethod::kFork ? 42 : 0));
        // Forkserver workers are the server's children, not ours.
        REQUIRE((b["parent"][i].item<int64_t>() == getpid()) ==
                (method != StartMethod::kForkserver));
        labels.push_back(b.indices()[i]);
      }
    }
    CHECK(labels == RandomSampler(0).indices(301, 0));
  }
  g_marker = 0;
}

TEST_CASE("spawn: a dataset without a recipe is refused at construction", "[spawn]") {
  const std::string e = option_error(std::make_shared<NoRecipeDataset>(10), spawn_options());
  CHECK_THAT(e, Catch::StartsWith("dataset: ") && Catch::Contains("recipe") &&
                    Catch::Contains("MPLOADER_REGISTER_DATASET") &&
                    Catch::Contains("start_method fork"));
}

TEST_CASE("spawn: a recipe naming an unregistered factory is refused", "[spawn]") {
  class Unregistered : public CountingDataset {
   public:
    using CountingDataset::CountingDataset;
    std::optional<DatasetRecipe> recipe() const override { return DatasetRecipe{"nope", ""}; }
  };
  const std::string e = option_error(std::make_shared<Unregistered>(10), spawn_options());
  CHECK_THAT(e, Catch::Contains("'nope'") && Catch::Contains("counting"));
}

TEST_CASE("spawn: function_collate and worker_init cannot cross exec", "[spawn]") {
  auto o = spawn_options();
  o.collate = function_collate([](const std::vector<Sample>& s) { return s.front(); });
  CHECK_THAT(option_error(std::make_shared<CountingDataset>(10), o), Catch::StartsWith("collate"));
  o = spawn_options();
  o.worker_init = [](const WorkerInfo&) {};
  CHECK_THAT(option_error(std::make_shared<CountingDataset>(10), o),
             Catch::StartsWith("worker_init"));
}

TEST_CASE("spawn: pad_collate is rebuilt with its value", "[spawn][process]") {
  auto o = spawn_options();
  o.collate = pad_collate(-3.5);
  o.num_workers = 1;
  Loader loader(std::make_shared<CountingDataset>(20), o);
  auto b = loader.next();
  REQUIRE(b);
  CHECK((*b)["label"].size(0) == 10);
}

TEST_CASE("spawn: a segfault in a spawned worker is symbolized in its own layout",
          "[spawn][crash][process]") {
  auto data = std::make_shared<FaultyDataset>(200, 47, FaultyDataset::Fault::kSegv);
  auto out = crash_testing::run_until_crash(data, spawn_options());
  REQUIRE(out.threw);
  CHECK(out.summary.cause == DeathCause::kSegfault);
  REQUIRE(out.report.is_object());
  REQUIRE_FALSE(out.report["frames"].empty());
  CHECK_THAT(out.report["frames"][0]["function"].get<std::string>(),
             Catch::Contains("write_through_null"));
}

// The slot-size probe is the first spawned worker, so the constructor reports it: as a recipe
// that failed in a new process, not as worker_init (there is none), nor as a bad sample.
TEST_CASE("spawn: a factory that throws in the worker is reported", "[spawn][process]") {
  try {
    Loader loader(std::make_shared<BrokenRecipeDataset>(50), spawn_options());
    FAIL("the constructor returned");
  } catch (const WorkerCrashed& e) {
    CHECK(e.cause() == DeathCause::kExit);
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("could not rebuild the dataset in a new process") &&
                   Catch::Contains("the data directory is not mounted") &&
                   !Catch::Contains("worker_init") && !Catch::Contains("max_batch_bytes"));
  }
}

TEST_CASE("forkserver: a crashed worker's exit status comes from the server",
          "[spawn][crash][process]") {
  auto o = spawn_options();
  o.start_method = StartMethod::kForkserver;
  auto data = std::make_shared<FaultyDataset>(200, 47, FaultyDataset::Fault::kSegv);
  auto out = crash_testing::run_until_crash(data, o);
  REQUIRE(out.threw);
  CHECK(out.summary.cause == DeathCause::kSegfault);
  CHECK(out.summary.signal == SIGSEGV);
  CHECK(crash_testing::contains(out.summary.in_flight_indices, 47));
  REQUIRE(out.report.is_object());
  CHECK_THAT(out.report["frames"][0]["function"].get<std::string>(),
             Catch::Contains("write_through_null"));
}

TEST_CASE("forkserver: restarts replace killed workers through the server",
          "[spawn][restart][process]") {
  auto o = spawn_options();
  o.start_method = StartMethod::kForkserver;
  o.max_restarts_per_epoch = 5;
  Loader loader(std::make_shared<CountingDataset>(400), o);
  std::vector<int> seen(400, 0);
  int kills = 0;
  while (auto b = loader.next()) {
    for (int64_t i : b->indices()) ++seen[static_cast<size_t>(i)];
    if (kills < 3 && b->sequence() % 10 == 5) {
      kill(loader.worker_pids()[kills % 2], SIGKILL);
      ++kills;
    }
  }
  for (int count : seen) REQUIRE(count == 1);
}

// A spawned or forkserver worker knows only what the text carries, and the dataset recipe's
// shared memory it names: every field must come back, recipes with any bytes and empty ones
// included.
TEST_CASE("spawn: a worker spec comes back from its text encoding field for field", "[spawn]") {
  worker::WorkerSpec spec;  // every field away from its default
  spec.settings.seed = 0xfedcba9876543210ULL;
  spec.settings.first_epoch = 12;
  spec.settings.rank = 5;
  spec.settings.allow_overflow = false;
  spec.settings.dataset_factory = "my factory";
  auto config = ipc::SealedBytes::create(std::string("a b\n- \0\xff", 8), "test-recipe");
  REQUIRE(config.ok());
  spec.settings.dataset_config = config.value();
  spec.settings.collator_recipe = "pad -1";
  spec.settings.dataset_fds = attached_memory();
  spec.worker_id = 3;
  spec.worker_slots = 7;
  spec.parent_pid = 4242;
  spec.region_fd = 11;
  spec.region_bytes = uint64_t{1} << 33;
  spec.task_event_fd = 12;
  spec.done_event_fd = 13;
  spec.socket_fd = 14;
  REQUIRE_FALSE(spec == worker::WorkerSpec{});
  std::optional<worker::WorkerSpec> decoded = worker::decode_spec(worker::encode_spec(spec));
  REQUIRE(decoded);
  CHECK_FALSE(*decoded == spec);  // the recipe is named, not carried
  CHECK(decoded->dataset_fd_numbers == worker::dataset_fds_of(spec));
  CHECK(decoded->dataset_fd_numbers.size() == 2);
  REQUIRE(decoded->config_fd == config.value()->fd());
  decoded->config_fd = dup(decoded->config_fd);  // as a new process has its own copy
  REQUIRE(worker::map_config(*decoded).ok());
  CHECK(decoded->config_fd == -1);
  CHECK(*decoded == spec);

  spec.settings.dataset_config.reset();  // empty recipes stay empty
  spec.settings.collator_recipe.clear();
  decoded = worker::decode_spec(worker::encode_spec(spec));
  REQUIRE(decoded);
  CHECK(worker::map_config(*decoded).ok());
  CHECK(*decoded == spec);
  CHECK_FALSE(worker::decode_spec("v4 " + worker::encode_spec(spec).substr(3)));
  CHECK_FALSE(worker::decode_spec(worker::encode_spec(spec).substr(0, 20)));
  // Recipes whose lengths do not add up to the bytes after the header (a spec cut short, or
  // one byte too many) are refused, not thrown.
  std::string text = worker::encode_spec(spec);
  CHECK_NOTHROW(worker::decode_spec(text + "x"));
  CHECK_FALSE(worker::decode_spec(text + "x"));
  CHECK_FALSE(worker::decode_spec(text.substr(0, text.size() - 1)));
  CHECK_FALSE(worker::decode_spec("not a spec"));
}

// A descriptor that is not the sealed recipe the header says is refused, not mapped: a
// worker would otherwise read another size, or bytes that can still change.
TEST_CASE("spawn: a recipe's shared memory of another size or unsealed is refused", "[spawn]") {
  auto sealed = ipc::SealedBytes::create("twelve bytes", "test-recipe");
  REQUIRE(sealed.ok());
  CHECK(sealed.value()->view() == "twelve bytes");
  CHECK_FALSE(ipc::SealedBytes::map(ipc::UniqueFd(dup(sealed.value()->fd())), 11).ok());
  auto same = ipc::SealedBytes::map(ipc::UniqueFd(dup(sealed.value()->fd())), 12);
  REQUIRE(same.ok());
  CHECK(same.value()->view() == "twelve bytes");
  CHECK(same.value()->fd() == -1);  // closed once mapped
  auto adopted = ipc::SealedBytes::adopt(ipc::UniqueFd(dup(sealed.value()->fd())));
  REQUIRE(adopted.ok());
  CHECK(adopted.value()->view() == "twelve bytes");
  CHECK(adopted.value()->fd() >= 0);  // kept, for handing on to workers
  ipc::UniqueFd open(memfd_create("unsealed", MFD_CLOEXEC));
  REQUIRE(ftruncate(open.get(), 12) == 0);
  auto refused = ipc::SealedBytes::map(ipc::UniqueFd(dup(open.get())), 12);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().describe().find("can change") != std::string::npos);
  CHECK_FALSE(ipc::SealedBytes::adopt(std::move(open)).ok());
}

// An environment variable holds 128 KiB and a forkserver message 64 KiB: the recipe goes in
// shared memory that the workers map. A recipe of 10 MB reaches spawned and forkserver workers
// byte for byte, in that memory (the factory checks), and the main process holds one copy
// however many workers start or restart.
TEST_CASE("spawn: a 10 MB recipe reaches spawned and forkserver workers", "[spawn][process]") {
  const std::string label = "mploader-dataset-recipe";
  for (StartMethod method : {StartMethod::kSpawn, StartMethod::kForkserver}) {
    INFO("start method " << static_cast<int>(method));
    auto o = spawn_options();
    o.start_method = method;
    o.max_restarts_per_epoch = 2;  // the epoch finishes only through a replacement
    Loader loader(std::make_shared<BigRecipeDataset>(60), o);
    int64_t samples = 0;
    bool killed = false;
    for (Batch& b : loader) {
      for (size_t i = 0; i < b.size(); ++i) {
        REQUIRE(b["label"][i].item<int64_t>() == b.indices()[i]);
      }
      samples += static_cast<int64_t>(b.size());
      CHECK(mappings_named(label) == 1);
      if (!killed) {  // its replacement maps the same memory
        kill(loader.worker_pids()[0], SIGKILL);
        killed = true;
      }
    }
    CHECK(samples == 60);
  }
  CHECK(mappings_named(label) == 0);
}

// The descriptors a recipe refers to reach spawned and forkserver workers, replacements
// included, and a worker keeps only the copies its dataset made.
TEST_CASE("spawn: descriptors beside the recipe reach the workers, which close the rest",
          "[spawn][process]") {
  for (StartMethod method : {StartMethod::kSpawn, StartMethod::kForkserver}) {
    INFO("start method " << static_cast<int>(method));
    auto o = spawn_options();
    o.start_method = method;
    o.max_restarts_per_epoch = 2;
    Loader loader(std::make_shared<AttachedDataset>(40), o);
    int64_t samples = 0;
    for (Batch& b : loader) {
      for (size_t i = 0; i < b.size(); ++i) {
        CHECK(b["kept"][i].item<int64_t>() == 1);
        CHECK(b["open"][i].item<int64_t>() == 1);
      }
      if (samples == 0) kill(loader.worker_pids()[0], SIGKILL);  // its replacement too
      samples += static_cast<int64_t>(b.size());
    }
    CHECK(samples == 40);
  }
}

// A library's registrations run inside dlopen(), which an exception must not cross: while a
// capture is open a duplicate is recorded, and outside one it throws as before.
TEST_CASE("registry: a capture records new names and duplicates instead of throwing",
          "[spawn]") {
  const auto factory = [](const std::string&) { return std::shared_ptr<Dataset>(); };
  const auto collator = [](const std::string&) { return std::shared_ptr<Collator>(); };
  register_dataset("capture-test-first", factory);
  {
    mploader::detail::RegistrationCapture capture;
    CHECK_THROWS_WITH(mploader::detail::RegistrationCapture(),
                      Catch::Contains("one library at a time"));
    CHECK_NOTHROW(register_dataset("capture-test-second", factory));
    CHECK_NOTHROW(register_dataset("capture-test-first", factory));
    CHECK_NOTHROW(register_collator("capture-test-collator", collator));
    CHECK(capture.datasets == std::vector<std::string>{"capture-test-second"});
    CHECK(capture.collators == std::vector<std::string>{"capture-test-collator"});
    CHECK(capture.duplicates == std::vector<std::string>{"dataset 'capture-test-first'"});
  }
  CHECK_THROWS_WITH(register_dataset("capture-test-second", factory),
                    Catch::Contains("registered twice"));
  const std::vector<std::string> names = registered_datasets();
  CHECK(std::count(names.begin(), names.end(), "capture-test-second") == 1);
  mploader::detail::RegistrationCapture reopened;  // the first one closed
  CHECK(reopened.datasets.empty());
}

}  // namespace test_spawn
