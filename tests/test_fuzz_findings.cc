// Inputs the fuzz targets found (fuzz/, docs/contributing.md "Fuzzing"), fed exactly as found through the
// public API: each was a crash, an exception other than the documented one, or undefined
// behaviour, and is now a clear error naming the input (or, where the input is fine, works).
// The files are in tests/data/fuzz/; the fuzz corpora hold them too.
#include "process_memory.h"
#include "test_datasets.h"

#include "loader/job_state.h"
#include "loader/state_json.h"

#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/npy.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

namespace test_fuzz_findings {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

const std::string kFound = std::string(MPLOADER_TEST_DATA_DIR) + "/fuzz/";

std::string file_text(const std::string& name) {
  std::ifstream in(kFound + name, std::ios::binary);
  REQUIRE(in.is_open());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The loader the fuzz target checks states against: 10 samples, batch_size 4, 3 batches.
Loader small_loader() {
  LoaderOptions o;
  o.num_workers = 0;
  o.batch_size = 4;
  return Loader(std::make_shared<CountingDataset>(10), o);
}

std::string state_error(const std::string& text) {
  Loader loader = small_loader();
  try {
    loader.load_state_dict(text);
  } catch (const OptionError& e) {
    CHECK(e.option() == "state");
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("fuzz findings: a loader state with a number beyond a double is not valid JSON",
          "[fuzz][resume]") {
  // json::parse threw json::out_of_range, which load_state_dict let through.
  CHECK_THAT(state_error(file_text("state-number-overflow.bin")),
             Catch::Contains("is not valid JSON") && Catch::Contains("number overflow") &&
                 Catch::Contains("Pass load_state_dict() the unmodified text"));
}

TEST_CASE("fuzz findings: a loader state with settings of another type still loads",
          "[fuzz][resume]") {
  // "drop_last": 0 where a boolean belongs threw json::type_error; the recorded settings only
  // name differences, so an odd one is left at its default and the state (batches 1 and 2
  // delivered, of this loader's plan) applies: the epoch resumes with batch 0 alone.
  Loader loader = small_loader();
  loader.load_state_dict(file_text("state-settings-of-another-type.json"));
  std::vector<uint64_t> sequences;
  for (Batch& b : loader) sequences.push_back(b.sequence());
  CHECK(sequences == std::vector<uint64_t>{0});
}

TEST_CASE("fuzz findings: a loader state of 2^62 batches is refused, its count costing nothing",
          "[fuzz][resume]") {
  // std::vector<bool>(num_batches) asked for 2^59 bytes; the delivered set is ranges now.
  CHECK_THAT(state_error(file_text("state-num-batches-2-62.json")),
             Catch::Contains("batches in the epoch 4611686018427387904 then, 3 now"));
}

TEST_CASE("fuzz findings: forged job states cost memory in their text, not in what they claim",
          "[fuzz][resume]") {
  namespace d = mploader::detail;
  d::JobState job;
  job.positions = uint64_t{1} << 40;
  job.world_size = 2;
  job.delivered.assign(job.positions);
  job.delivered.insert_range(0, uint64_t{1} << 39);  // half of 2^40 delivered: one range
  const int64_t before = testing_memory::status_bytes("VmRSS:");
  // A state of 2^32 positions allocated 0.5 GiB of bits before it was refused.
  CHECK_THAT(state_error(d::to_text(job)), Catch::Contains("cannot resume the job state"));
  // Runs with a step that name 2^31 positions one by one, in 25 bytes of text.
  d::state_json::json body = d::state_json::json::parse(d::to_text(job));
  body["delivered"] = d::state_json::json::array({d::state_json::json::array(
      {uint64_t{0}, uint64_t{2}, uint64_t{1} << 31})});
  body.erase("checksum");
  CHECK_THAT(state_error(d::state_json::sealed_text(body)), Catch::Contains("one by one"));
  CHECK(testing_memory::status_bytes("VmRSS:") - before < (int64_t{64} << 20));
}

TEST_CASE("fuzz findings: a state nested deeper than any state is refused before parsing",
          "[fuzz][resume]") {
  // 10 MB of '[' cost the JSON parser 0.75 GiB.
  CHECK_THAT(state_error(std::string(10 * 1000 * 1000, '[')),
             Catch::Contains("nests lists and objects 10000000 deep") &&
                 Catch::Contains("it is not a state"));
}

namespace {

std::string npy_error(const std::string& name) {
  try {
    NpyArray array(kFound + name);
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(name));
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("fuzz findings: .npy headers with impossible shapes are clear errors", "[fuzz][npy]") {
  // std::stoll threw std::out_of_range past NpyArray's documented mploader::Error.
  CHECK_THAT(npy_error("npy-dimension-beyond-int64.npy"),
             Catch::Contains("has a dimension of 99999999999999999999, more than any array "
                             "holds; the header is damaged: write the file again"));
  // 2^32 x 2^32 float64 wrapped around to 0 bytes, which the 16-byte file "had": its rows were
  // then read far beyond the mapping.
  CHECK_THAT(npy_error("npy-shape-wraps-to-zero.npy"),
             Catch::Contains("the header's shape (4294967296, 4294967296) of '<f8' is more than "
                             "2^64 bytes"));
  // Junk between the digits was skipped, making up a shape from the digits in it.
  CHECK_THAT(npy_error("npy-shape-not-numbers.npy"),
             Catch::Contains("is not a tuple of whole numbers"));
}

}  // namespace test_fuzz_findings
