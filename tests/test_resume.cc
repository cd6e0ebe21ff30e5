// Loader::state_dict() / load_state_dict(): a program restarted mid-epoch gets exactly the
// batches it had not received. The first part of each epoch runs in a separate program (this
// test binary run again as a hidden test case), so nothing but the saved text crosses the
// restart; the rest runs in a new Loader here.
#include "loader/batch_list.h"
#include "loader/resume_state.h"
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;  // unistd.h declares it only with _GNU_SOURCE

namespace test_resume {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

const char* kChildTest = "resume: first part of an epoch in its own program";

// CountingDataset that takes `delay_ms` over one index, so that out-of-order delivery really
// delivers a set that is not a prefix.
class SlowAtDataset : public CountingDataset {
 public:
  SlowAtDataset(size_t n, int64_t slow_index, int delay_ms)
      : CountingDataset(n), slow_(slow_index), delay_ms_(delay_ms) {}
  Sample get(int64_t index) override {
    if (index == slow_) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    return CountingDataset::get(index);
  }

 private:
  int64_t slow_;
  int delay_ms_;
};

struct Setup {
  int64_t workers = 2;
  bool in_order = true;
  bool shuffle = false;
  uint64_t seed = 0;
  bool persistent = false;
  uint64_t full_epochs = 0;  // epochs run whole before the one that is cut
  size_t take = 5;           // batches received before the state is taken
  size_t n = 103;
  int64_t batch = 8;
  int64_t slow_index = -1;

  std::string encode() const {
    std::ostringstream s;
    s << workers << ' ' << in_order << ' ' << shuffle << ' ' << seed << ' ' << persistent << ' '
      << full_epochs << ' ' << take << ' ' << n << ' ' << batch << ' ' << slow_index;
    return s.str();
  }
  static Setup decode(const std::string& text) {
    Setup u;
    std::istringstream s(text);
    s >> u.workers >> u.in_order >> u.shuffle >> u.seed >> u.persistent >> u.full_epochs >>
        u.take >> u.n >> u.batch >> u.slow_index;
    return u;
  }
  LoaderOptions options() const {
    LoaderOptions o;
    o.num_workers = workers;
    o.batch_size = batch;
    o.prefetch_factor = 2;
    o.in_order = in_order;
    o.shuffle = shuffle;
    o.seed = seed;
    o.persistent_workers = persistent;
    return o;
  }
  std::shared_ptr<Dataset> dataset() const {
    return std::make_shared<SlowAtDataset>(n, slow_index, 300);
  }
  std::vector<std::vector<int64_t>> plan(uint64_t epoch) const {
    std::shared_ptr<Sampler> order = shuffle ? std::shared_ptr<Sampler>(new RandomSampler(seed))
                                             : std::make_shared<SequentialSampler>();
    return FixedSizeBatchSampler(order, static_cast<size_t>(batch), false).batches(n, epoch);
  }
};

using Received = std::map<uint64_t, std::vector<int64_t>>;  // sequence -> indices

struct FirstPart {
  std::string state;
  Received received;
  std::vector<uint64_t> order;
};

// Runs the hidden test case below as a new program and reads what it wrote.
FirstPart run_first_part(const Setup& setup) {
  char out_template[] = "/tmp/mploader-resume-XXXXXX";
  const int fd = mkstemp(out_template);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string out = out_template;
  std::vector<std::string> env_text = {"MPLOADER_RESUME_SETUP=" + setup.encode(),
                                       "MPLOADER_RESUME_OUT=" + out};
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  for (std::string& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  std::string self = "/proc/self/exe", name = kChildTest, quiet = "--reporter=compact";
  char* argv[] = {self.data(), name.data(), quiet.data(), nullptr};
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execve(argv[0], argv, env.data());
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  FirstPart part;
  std::ifstream in(out);
  std::getline(in, part.state);
  uint64_t sequence;
  size_t count;
  while (in >> sequence >> count) {
    std::vector<int64_t>& indices = part.received[sequence];
    indices.resize(count);
    for (int64_t& i : indices) in >> i;
    part.order.push_back(sequence);
  }
  std::remove(out.c_str());
  REQUIRE(part.order.size() == setup.take);
  return part;
}

// The rest of the epoch in a new Loader; then checks that both parts together are exactly the
// epoch's batches, each once, and that the next epoch runs whole.
void resume_and_check(const Setup& first, const Setup& second) {
  FirstPart part = run_first_part(first);
  const uint64_t epoch = first.full_epochs;
  const auto plan = first.plan(epoch);
  Loader loader(second.dataset(), second.options());
  loader.load_state_dict(part.state);
  CHECK(loader.epoch() == epoch);
  CHECK(loader.batches_per_epoch() == plan.size());
  std::vector<uint64_t> resumed;
  for (Batch& b : loader) {
    REQUIRE(b.epoch() == epoch);
    REQUIRE(b.sequence() < plan.size());
    REQUIRE(b.indices() == plan[b.sequence()]);
    REQUIRE(b["label"][0].item<int64_t>() == b.indices()[0]);
    REQUIRE(part.received.count(b.sequence()) == 0);  // not received before the restart
    resumed.push_back(b.sequence());
  }
  for (const auto& [sequence, indices] : part.received) REQUIRE(indices == plan[sequence]);
  std::set<uint64_t> all(resumed.begin(), resumed.end());
  REQUIRE(all.size() == resumed.size());  // none twice
  all.insert(part.order.begin(), part.order.end());
  REQUIRE(all.size() == plan.size());
  if (first.in_order) {
    for (size_t i = 0; i < part.order.size(); ++i) REQUIRE(part.order[i] == i);
  }
  if (second.in_order) REQUIRE(std::is_sorted(resumed.begin(), resumed.end()));
  // The next iteration is the next epoch, from its first batch.
  size_t next_epoch_batches = 0;
  for (Batch& b : loader) {
    REQUIRE(b.epoch() == epoch + 1);
    ++next_epoch_batches;
  }
  CHECK(next_epoch_batches == first.plan(epoch + 1).size());
}

}  // namespace

TEST_CASE("resume: first part of an epoch in its own program", "[.resume-child]") {
  const char* setup_text = std::getenv("MPLOADER_RESUME_SETUP");
  const char* out = std::getenv("MPLOADER_RESUME_OUT");
  REQUIRE(setup_text);
  REQUIRE(out);
  const Setup setup = Setup::decode(setup_text);
  Loader loader(setup.dataset(), setup.options());
  for (uint64_t e = 0; e < setup.full_epochs; ++e) {
    for (Batch& b : loader) (void)b;
  }
  std::ofstream file(out);
  std::ostringstream received;
  for (size_t k = 0; k < setup.take; ++k) {
    std::optional<Batch> b = loader.next();
    REQUIRE(b);
    received << b->sequence() << ' ' << b->size();
    for (int64_t i : b->indices()) received << ' ' << i;
    received << '\n';
  }
  // Let the workers finish what they prefetched: those batches are ready but not received,
  // and the state must leave them out.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  file << loader.state_dict() << '\n' << received.str();
}

TEST_CASE("resume: in order, 2 workers, a new program gets exactly the rest of the epoch",
          "[resume][process]") {
  Setup s;
  SECTION("workers stop at each epoch's end") { resume_and_check(s, s); }
  SECTION("persistent workers") {
    s.persistent = true;
    resume_and_check(s, s);
  }
}

TEST_CASE("resume: shuffled with a seed, in a later epoch, same permutation",
          "[resume][process]") {
  Setup s;
  s.shuffle = true;
  s.seed = 1234;
  s.full_epochs = 2;
  s.take = 7;
  SECTION("persistent workers") {
    s.persistent = true;
    resume_and_check(s, s);
  }
  SECTION("workers stop at each epoch's end") { resume_and_check(s, s); }
}

TEST_CASE("resume: out of order, a slow batch is issued again and the rest is not",
          "[resume][process]") {
  Setup s;
  s.in_order = false;
  s.slow_index = 9;  // in batch 1
  s.take = 6;
  resume_and_check(s, s);
}

TEST_CASE("resume: num_workers = 0 on either side", "[resume][process]") {
  Setup in_process;
  in_process.workers = 0;
  Setup workers;
  SECTION("0 then 0") { resume_and_check(in_process, in_process); }
  SECTION("2 workers then 0") { resume_and_check(workers, in_process); }
  SECTION("0 then 2 workers") { resume_and_check(in_process, workers); }
}

TEST_CASE("resume: an arbitrary delivered set gives exactly its complement",
          "[resume][process]") {
  Setup s;
  s.in_order = GENERATE(false, true);
  const auto plan = s.plan(0);
  mploader::detail::ResumeState state;
  state.plan = mploader::detail::fingerprint(mploader::detail::ListedBatches(plan), s.n);
  state.delivered.assign(plan.size());
  const std::set<uint64_t> delivered = {1, 3, 4, 7, 12};
  for (uint64_t d : delivered) state.delivered.insert(d);
  Loader loader(s.dataset(), s.options());
  loader.load_state_dict(mploader::detail::to_text(state));
  std::vector<uint64_t> got;
  for (Batch& b : loader) {
    REQUIRE(b.indices() == plan[b.sequence()]);
    got.push_back(b.sequence());
  }
  std::set<uint64_t> expected;
  for (uint64_t q = 0; q < plan.size(); ++q) {
    if (!delivered.count(q)) expected.insert(q);
  }
  REQUIRE(std::set<uint64_t>(got.begin(), got.end()) == expected);
  REQUIRE(got.size() == expected.size());
  if (s.in_order) REQUIRE(std::is_sorted(got.begin(), got.end()));
}

namespace {

// The state after `take` batches of epoch 0 with num_workers = 0.
std::string state_after(const Setup& s, size_t take) {
  Loader loader(s.dataset(), s.options());
  for (size_t k = 0; k < take; ++k) REQUIRE(loader.next());
  return loader.state_dict();
}

void check_refused(Loader& loader, const std::string& text, const std::string& expected) {
  try {
    loader.load_state_dict(text);
    FAIL("load_state_dict accepted " << text);
  } catch (const OptionError& e) {
    CHECK(e.option() == "state");
    INFO(e.what());
    CHECK_THAT(e.what(), Catch::Contains(expected));
  }
}

}  // namespace

TEST_CASE("resume: the delivered set reads back as the ranges it holds, across word edges",
          "[resume]") {
  std::mt19937_64 random(7);
  for (uint64_t size : {0, 1, 63, 64, 65, 130, 1000}) {
    std::vector<bool> reference(size, false);
    mploader::detail::SequenceSet set(size);
    for (int k = 0; k < 5 && size > 0; ++k) {  // runs of random length, some over whole words
      const uint64_t begin = random() % size;
      const uint64_t end = std::min<uint64_t>(size, begin + 1 + random() % 150);
      set.insert_range(begin, end);
      for (uint64_t n = begin; n < end; ++n) reference[n] = true;
    }
    std::vector<std::pair<uint64_t, uint64_t>> expected;
    for (uint64_t n = 0; n < size; ++n) {
      if (!reference[n]) continue;
      if (!expected.empty() && expected.back().second == n) {
        ++expected.back().second;
      } else {
        expected.emplace_back(n, n + 1);
      }
    }
    INFO("size " << size);
    CHECK(set.ranges() == expected);
    for (uint64_t n = 0; n < size; ++n) CHECK(set.contains(n) == reference[n]);
  }
  // A state naming billions of batches with few delivered is saved and read in well under a
  // second: its ranges are found a word at a time.
  mploader::detail::ResumeState state;
  state.plan = {10, uint64_t{1} << 31, 1};
  state.delivered.assign(state.plan.num_batches);
  state.delivered.insert_range(1, 3);
  state.delivered.insert_range((uint64_t{1} << 31) - 5, uint64_t{1} << 31);
  const auto back = mploader::detail::from_text(mploader::detail::to_text(state));
  CHECK(back.delivered == state.delivered);
}

TEST_CASE("resume: corrupt, truncated, foreign and mismatched states are clear errors",
          "[resume]") {
  Setup s;
  s.workers = 0;
  const std::string good = state_after(s, 3);
  Loader loader(s.dataset(), s.options());
  check_refused(loader, good.substr(0, good.size() / 2), "not valid JSON, it may be truncated");
  check_refused(loader, "", "not valid JSON");
  check_refused(loader, "{\"epoch\": 1}", "not a Loader state");
  std::string other_version = good;
  const std::string version_field = "\"mploader_loader_state\":1";
  REQUIRE(other_version.find(version_field) != std::string::npos);
  other_version.replace(other_version.find(version_field), version_field.size(),
                        "\"mploader_loader_state\":2");
  check_refused(loader, other_version, "version 2, and this mploader reads version 1");
  std::string altered = good;
  const std::string epoch_field = "\"epoch\":0";
  REQUIRE(altered.find(epoch_field) != std::string::npos);
  altered.replace(altered.find(epoch_field), epoch_field.size(), "\"epoch\":1");
  check_refused(loader, altered, "checksum does not match");

  Setup other_batch = s;
  other_batch.batch = 10;
  Loader batch_loader(other_batch.dataset(), other_batch.options());
  check_refused(batch_loader, good, "batch_size 8 then, 10 now");
  Setup other_size = s;
  other_size.n = 120;
  Loader size_loader(other_size.dataset(), other_size.options());
  check_refused(size_loader, good, "dataset size 103 then, 120 now");
  Setup other_seed = s;
  other_seed.shuffle = true;
  other_seed.seed = 5;
  Setup seeded = other_seed;
  seeded.seed = 6;
  Loader seed_loader(seeded.dataset(), seeded.options());
  check_refused(seed_loader, state_after(other_seed, 2), "seed 5 then, 6 now");

  // A refused state changes nothing: the loader runs epoch 0 whole.
  size_t batches = 0;
  for (Batch& b : loader) {
    REQUIRE(b.sequence() == batches++);
  }
  CHECK(batches == s.plan(0).size());
}

TEST_CASE("resume: set_epoch, a finished epoch and an unstarted loader", "[resume]") {
  Setup s;
  s.workers = 0;
  const std::string mid = state_after(s, 4);
  SECTION("set_epoch of the state's epoch keeps it, another epoch discards it") {
    Loader loader(s.dataset(), s.options());
    loader.load_state_dict(mid);
    loader.set_epoch(0);
    REQUIRE(loader.next()->sequence() == 4);
    loader.load_state_dict(mid);
    CHECK(loader.state_dict() == mid);  // a loaded state not yet applied is saved as it is
    loader.set_epoch(3);
    std::optional<Batch> first = loader.next();
    CHECK(first->sequence() == 0);
    CHECK(first->epoch() == 3);
  }
  SECTION("after a finished epoch the state starts the next one") {
    Loader loader(s.dataset(), s.options());
    for (Batch& b : loader) (void)b;
    Loader resumed(s.dataset(), s.options());
    resumed.load_state_dict(loader.state_dict());
    CHECK(resumed.epoch() == 1);
    std::optional<Batch> first = resumed.next();
    CHECK(first->epoch() == 1);
    CHECK(first->sequence() == 0);
  }
  SECTION("after the last batch, before the end is seen, what remains is nothing") {
    Loader loader(s.dataset(), s.options());
    for (size_t k = 0; k < s.plan(0).size(); ++k) REQUIRE(loader.next());
    Loader resumed(s.dataset(), s.options());
    resumed.load_state_dict(loader.state_dict());
    CHECK_FALSE(resumed.next());  // the end of epoch 0, as the first program would see it
    CHECK(resumed.next()->epoch() == 1);
  }
  SECTION("an unstarted loader saves its first epoch, set_epoch included") {
    Loader loader(s.dataset(), s.options());
    loader.set_epoch(5);
    Loader resumed(s.dataset(), s.options());
    resumed.load_state_dict(loader.state_dict());
    std::optional<Batch> first = resumed.next();
    CHECK(first->epoch() == 5);
    CHECK(first->sequence() == 0);
  }
}

TEST_CASE("resume: state_dict_without counts a batch fetched ahead of the loop as not received",
          "[resume]") {
  Setup s;
  s.workers = 0;
  Loader loader(s.dataset(), s.options());
  for (size_t k = 0; k < 3; ++k) REQUIRE(loader.next());
  std::optional<Batch> ahead = loader.next();  // a prefetcher's: the loop has not seen it
  REQUIRE(ahead->sequence() == 3);
  const std::string state = loader.state_dict_without(*ahead);
  CHECK(state == state_after(s, 3));
  Loader resumed(s.dataset(), s.options());
  resumed.load_state_dict(state);
  CHECK(resumed.next()->sequence() == 3);
  // Once its epoch is over, the batch is not the state's to take back.
  while (loader.next()) {
  }
  CHECK(loader.state_dict_without(*ahead) == loader.state_dict());
}

}  // namespace test_resume
