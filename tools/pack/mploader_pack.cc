// mploader-pack: turns a dataset into WebDataset-compatible tar shards of a chosen size, with a
// sample index per shard, a pack description and a manifest, for PackedShards (read by index,
// locally or by URL) and TarShards (streamed).
//
//   mploader-pack /data/photos -o /data/photos-packed --max-side 512 --quality 90
//   mploader-pack /data/train.h5 -o packed --fields image=/images,label=/labels
//   mploader-pack /data/parquet-folder -o packed --shuffle-seed 7 --shard-size 512MB
//   mploader-pack /data/photos -o s3://bucket/photos-packed/   # staged locally, uploaded
//
// It reads with a Loader (worker processes, crash reports, restarts), writes shards whole and
// records each one, so a pack that is stopped (Ctrl-C, SIGKILL, a reboot) resumes where it
// stopped when the same command runs again; over a finished pack of the same input and options
// it says so and writes nothing. The same input and options give the same bytes.
// Exit: 0 written (or complete already), 1 a failure (the message says what to do), 2 bad
// usage.
#include "pack_sources.h"

#include "core/plugin_library.h"
#include "core/recipes.h"
#include "remote/shard_cache.h"
#include "util/fnv1a.h"
#include "sampler/block_shuffle.h"
#include "shards/pack_writer.h"
#include "util/errors.h"

#include <mploader/mploader.h>
#include <mploader/shards/tar_shards.h>
#ifdef MPLOADER_PACK_HDF5
#include <mploader/hdf5/h5_dataset.h>
#endif
#ifdef MPLOADER_PACK_PARQUET
#include <mploader/parquet/parquet_shards.h>
#endif

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace sd = mploader::shards::detail;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string input, output, format = "auto", fields, shard_size = "256MB", stage, endpoint_url;
  std::string dataset_lib, dataset, dataset_config;
  int max_side = 512, quality = 90, workers = 2, batch = 16, max_restarts = 3;
  bool copy = false, overwrite = false;
  int64_t shuffle_seed = -1;
};

// The positions [start, samples) in chunks of one epoch each (a sampler's list costs memory
// per index: a chunk bounds it), each position mapped to the source index it holds.
class PackOrder : public mploader::Sampler {
 public:
  PackOrder(int64_t start, int64_t samples, int64_t seed)
      : start_(start), samples_(samples), seed_(seed),
        permutation_(static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL + 1,
                     static_cast<uint64_t>(std::max<int64_t>(samples, 1))) {}
  static constexpr int64_t kChunk = int64_t{1} << 20;
  int64_t epochs() const { return (samples_ - start_ + kChunk - 1) / kChunk; }
  std::vector<int64_t> indices(size_t, uint64_t epoch) override {
    std::vector<int64_t> out;
    const int64_t begin = start_ + static_cast<int64_t>(epoch) * kChunk;
    for (int64_t p = begin; p < std::min(samples_, begin + kChunk); ++p) {
      out.push_back(seed_ < 0 ? p : static_cast<int64_t>(permutation_(static_cast<uint64_t>(p))));
    }
    return out;
  }

 private:
  int64_t start_, samples_, seed_;
  mploader::detail::KeyedPermutation permutation_;
};

std::string detect_format(const Args& a) {
  if (!a.dataset_lib.empty()) return "plugin";
  const std::string& input = a.input;
  if (fs::is_regular_file(input)) {
    const std::string ext = fs::path(input).extension().string();
    if (ext == ".h5" || ext == ".hdf5") return "hdf5";
    if (ext == ".txt") return "images";
    throw mploader::OptionError("input", "cannot tell what " + mploader::detail::in_quotes(input) +
                                             " holds: give --format images, parquet, tar or hdf5");
  }
  if (!fs::is_directory(input)) {
    throw mploader::OptionError("input", "no file or folder " + mploader::detail::in_quotes(input) +
                                             ": give an image folder, a list file, a folder of "
                                             "Parquet files or tar shards, or an HDF5 file");
  }
  for (const auto& e : fs::directory_iterator(input)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".parquet") return "parquet";
    if (ext == ".tar") return "tar";
  }
  return "images";
}

// A dataset a library of the user's registers (built with mploader_add_dataset_plugin).
std::shared_ptr<mploader::Dataset> plugin_dataset(const Args& a) {
  using mploader::OptionError;
  const mploader::detail::PluginLibrary library =
      mploader::detail::load_plugin_library(a.dataset_lib, "--dataset-lib", "mploader-pack");
  if (std::find(library.datasets.begin(), library.datasets.end(), a.dataset) ==
      library.datasets.end()) {
    throw OptionError("dataset", mploader::detail::message(
        "--dataset", "'" + a.dataset_lib + "' registers no dataset named '" + a.dataset + "'",
        "Give one it registers: " + mploader::detail::comma_list(library.datasets)));
  }
  std::shared_ptr<mploader::Dataset> data;
  try {
    data = mploader::detail::find_dataset_factory(a.dataset)(a.dataset_config);
  } catch (const std::exception& e) {
    throw OptionError("dataset-config", mploader::detail::message(
        "--dataset-config", "dataset '" + a.dataset + "' refused '" + a.dataset_config +
                                "': " + e.what(),
        "Fix the config given to it"));
  }
  if (!data) throw OptionError("dataset", "mploader-pack: dataset '" + a.dataset + "' made no dataset");
  return mploader::pack::generic_source(data);
}

std::shared_ptr<mploader::Dataset> open_input(const Args& a, const std::string& format) {
  using mploader::OptionError;
  if (format == "plugin") return plugin_dataset(a);
  if (format == "images") {
    return mploader::pack::image_source(a.input, {a.copy, a.max_side, a.quality});
  }
  if (format == "tar") {
    return mploader::pack::generic_source(mploader::shards::TarShards::from_directory(a.input));
  }
#ifdef MPLOADER_PACK_PARQUET
  if (format == "parquet") {
    return mploader::pack::generic_source(mploader::parquet::ParquetShards::from_directory(a.input));
  }
#endif
#ifdef MPLOADER_PACK_HDF5
  if (format == "hdf5") {
    std::vector<mploader::hdf5::H5Field> fields;
    std::stringstream list(a.fields);
    for (std::string item; std::getline(list, item, ',');) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) {
        throw OptionError("fields", "--fields entry " + mploader::detail::in_quotes(item) +
                                        " is not name=/path: give image=/images,label=/labels");
      }
      fields.push_back({item.substr(0, eq), item.substr(eq + 1)});
    }
    if (fields.empty()) {
      throw OptionError("fields", "an HDF5 input needs --fields name=/dataset,...: which "
                                  "datasets of the file are the sample's fields");
    }
    return mploader::pack::generic_source(
        std::make_shared<mploader::hdf5::H5Dataset>(a.input, fields));
  }
#endif
  throw OptionError("format", "--format " + format + " is not one this build reads: give "
                              "images, tar, parquet or hdf5 (parquet and hdf5 need their "
                              "components built)");
}

// The settings a resumed pack must share: everything that changes the bytes written.
std::string settings_of(const Args& a, const std::string& format, int64_t samples,
                        int64_t shard_bytes) {
  nlohmann::json s = {{"format", format},
                      {"samples", samples},
                      {"shard_bytes", shard_bytes},
                      {"order", a.shuffle_seed < 0 ? nlohmann::json("fixed")
                                                   : nlohmann::json(a.shuffle_seed)}};
  if (format == "images") {
    s["images"] = a.copy ? nlohmann::json("copied")
                         : nlohmann::json{{"max_side", a.max_side}, {"quality", a.quality}};
  }
  if (format == "hdf5") s["fields"] = a.fields;
  if (format == "plugin") {
    s["dataset"] = {{"library", fs::absolute(a.dataset_lib).lexically_normal().string()},
                    {"name", a.dataset}, {"config", a.dataset_config}};
  } else {
    s["input"] = fs::absolute(a.input).lexically_normal().string();
  }
  return s.dump();
}

class Progress {
 public:
  Progress(int64_t start, int64_t total) : start_(start), total_(total), began_(Clock::now()) {}
  void update(int64_t done, int64_t shards, bool last = false) {
    const auto now = Clock::now();
    if (!last && now - shown_ < std::chrono::seconds(tty_ ? 1 : 10)) return;
    shown_ = now;
    const double s = std::chrono::duration<double>(now - began_).count();
    const double rate = s > 0 ? (done - start_) / s : 0;
    const double eta = rate > 0 ? (total_ - done) / rate : 0;
    std::fprintf(stderr, "%spacked %lld/%lld samples (%.1f%%), %lld shards, %.0f samples/s, "
                 "ETA %dm%02ds%s", tty_ ? "\r" : "", static_cast<long long>(done),
                 static_cast<long long>(total_), total_ ? 100.0 * done / total_ : 100.0,
                 static_cast<long long>(shards), rate, static_cast<int>(eta) / 60,
                 static_cast<int>(eta) % 60, tty_ && !last ? "" : "\n");
  }

 private:
  int64_t start_, total_;
  Clock::time_point began_, shown_{};
  bool tty_ = ::isatty(2) != 0;
};

// Where a pack for a URL is written before each file is uploaded: --stage, else a folder of
// the temporary one named after the URL, so that running the command again resumes it.
std::string stage_of(const Args& a) {
  if (!a.stage.empty()) return a.stage;
  mploader::detail::Fnv1a hash;
  for (char c : a.output) hash.add_byte(static_cast<uint8_t>(c));
  char name[64];
  std::snprintf(name, sizeof name, "mploader-pack-stage-%016llx",
                static_cast<unsigned long long>(hash.value()));
  return (fs::temp_directory_path() / name).string();
}

// Uploads each finished file of the stage to the URL (PUT, through the remote component).
std::function<void(const std::string&, const std::string&)> uploader(const Args& a,
                                                                     const std::string& stage) {
  mploader::remote::RemoteOptions o;
  o.endpoint_url = a.endpoint_url;
  std::string base = a.output;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return [o, base, stage](const std::string& name, const std::string& sha256) {
    mploader::remote::upload_file((fs::path(stage) / name).string(), base + "/" + name, o,
                                  sha256);
  };
}

// A folder written inside the input folder would be read as input by the next run (an image
// folder's class, a tar folder's shards): refused before anything is read or written. Paths
// are compared resolved (symbolic links, "..", "."), however they were spelled.
void check_outside_input(const Args& a, const std::string& folder, bool stage) {
  if (a.input.empty() || !fs::is_directory(a.input)) return;
  auto resolved = [](const std::string& p, std::error_code& ec) {
    fs::path r = fs::weakly_canonical(fs::absolute(p), ec).lexically_normal();
    return r.filename().empty() ? r.parent_path() : r;  // without a trailing '/'
  };
  std::error_code ec_in, ec_out;
  const fs::path in = resolved(a.input, ec_in);
  const fs::path out = resolved(folder, ec_out);
  if (ec_in || ec_out) return;
  auto o = out.begin();
  for (auto i = in.begin(); i != in.end(); ++i, ++o) {
    if (o == out.end() || *i != *o) return;
  }
  const std::string what = stage ? "the staging folder (--stage) " : "the output folder ";
  throw mploader::OptionError("output", mploader::detail::message(
      "mploader-pack", what + mploader::detail::in_quotes(folder) +
                           " is inside the input folder " + mploader::detail::in_quotes(a.input) +
                           " (" + mploader::detail::in_quotes(out.string()) + " in " +
                           mploader::detail::in_quotes(in.string()) +
                           "): the next run would read the pack as input",
      "Give " + std::string(stage ? "--stage" : "--output") + " a folder outside the input, " +
          "such as " + mploader::detail::in_quotes(in.string() + "-packed")));
}

// The samples from `start` on, read through a Loader and written in order.
void write_samples(const Args& a, std::shared_ptr<mploader::Dataset> source,
                   sd::PackWriter& writer, int64_t start, int64_t samples) {
  auto order = std::make_shared<PackOrder>(start, samples, a.shuffle_seed);
  Progress progress(start, samples);
  mploader::LoaderOptions lo;
  lo.batch_size = static_cast<size_t>(a.batch);
  lo.num_workers = a.workers;
  lo.sampler = order;
  // A worker that dies (killed, out of memory) is replaced and its batches made again, in
  // order: the bytes written do not change.
  lo.max_restarts_per_epoch = a.max_restarts;
  mploader::Loader loader(std::move(source), lo);
  for (int64_t epoch = 0; epoch < order->epochs(); ++epoch) {
    loader.set_epoch(static_cast<uint64_t>(epoch));
    for (mploader::Batch& b : loader) {
      std::vector<sd::PackedField> fields;
      for (const auto& [name, column] : b.texts()) {
        std::string kind, field;
        sd::PackedField f;
        if (!mploader::pack::split_member_field(name, kind, field) || !sd::kind_of(kind, f.kind)) {
          throw mploader::Error("mploader-pack: unexpected field " + name);
        }
        f.name = field;
        fields.push_back(f);
      }
      for (size_t row = 0; row < b.size(); ++row) {
        std::vector<std::string_view> members;
        for (const auto& [name, column] : b.texts()) members.push_back(column[row]);
        writer.add(fields, members);
      }
      progress.update(writer.next_sample(), writer.shards_done());
    }
  }
  progress.update(samples, writer.shards_done(), true);
}

void pack(const Args& a) {
  const std::string format = a.format == "auto" ? detect_format(a) : a.format;
  const int64_t shard_bytes = mploader::remote::detail::parse_byte_size(a.shard_size);
  if (shard_bytes <= 0) {
    throw mploader::OptionError("shard-size", "--shard-size " + a.shard_size +
                                                  " is not a size: give 256MB, 1G or bytes");
  }
  const bool remote = mploader::remote::is_url(a.output);
  const std::string folder = remote ? stage_of(a) : a.output;
  check_outside_input(a, folder, remote);
  std::shared_ptr<mploader::Dataset> source = open_input(a, format);
  const auto samples = static_cast<int64_t>(source->size());
  sd::PackWriter writer({folder, shard_bytes, samples, settings_of(a, format, samples, shard_bytes),
                         a.overwrite, remote ? uploader(a, folder) : nullptr});
  if (writer.complete()) {
    if (remote) fs::remove_all(folder);  // every file was uploaded
    std::printf("%s is already complete: %lld samples in %lld shards, packed from this input "
                "with these options; nothing to write\n", a.output.c_str(),
                static_cast<long long>(samples), static_cast<long long>(writer.shards_done()));
    return;
  }
  const int64_t start = writer.next_sample();
  if (start > 0) std::fprintf(stderr, "mploader-pack: resuming at sample %lld\n",
                              static_cast<long long>(start));
  if (start < samples) write_samples(a, source, writer, start, samples);
  writer.finish();
  if (remote) fs::remove_all(folder);  // every file is uploaded
  std::printf("wrote %s: %lld samples in %lld shards\n", a.output.c_str(),
              static_cast<long long>(samples), static_cast<long long>(writer.shards_done()));
}

// The library's messages start "mploader: "; others get the program's name.
std::string with_prefix(const std::string& text) {
  return text.rfind("mploader", 0) == 0 ? text : "mploader-pack: " + text;
}

}  // namespace

int main(int argc, char** argv) {
  mploader::init(argc, argv);
  CLI::App app{"Packs a dataset into WebDataset-compatible tar shards with a sample index, "
               "for PackedShards (read by index, locally or by URL) and TarShards."};
  Args a;
  app.add_option("input", a.input, "an image folder or list file, a folder of Parquet files "
                 "or tar shards, or an HDF5 file (none with --dataset-lib)");
  app.add_option("-o,--output", a.output, "the folder to write (created), or an s3:// or "
                 "http(s):// URL to upload to")->required();
  app.add_option("--stage", a.stage, "a URL output: the local folder a shard is written to "
                 "before its upload (default: one in the temporary folder, named after the URL)");
  app.add_option("--endpoint-url", a.endpoint_url, "s3:// output: the S3-compatible endpoint "
                 "(default: AWS_ENDPOINT_URL, else AWS S3)");
  app.add_option("--format", a.format, "auto, images, tar, parquet or hdf5")
      ->check(CLI::IsMember({"auto", "images", "tar", "parquet", "hdf5", "plugin"}));
  app.add_option("--fields", a.fields, "HDF5: the fields, name=/dataset,...");
  app.add_option("--shard-size", a.shard_size, "the most bytes of a tar shard (256MB)");
  app.add_option("--max-side", a.max_side, "images: the longest side written (512)")
      ->check(CLI::Range(16, 65535));
  app.add_option("--quality", a.quality, "images: the JPEG quality (90)")->check(CLI::Range(1, 100));
  app.add_flag("--copy-images", a.copy, "images: copy the files as they are");
  app.add_option("--shuffle-seed", a.shuffle_seed, "write the samples in an order shuffled by "
                 "this seed (default: the input's order)")->check(CLI::NonNegativeNumber);
  app.add_option("--workers", a.workers, "worker processes (2)")->check(CLI::Range(0, 1024));
  app.add_option("--batch", a.batch, "samples per batch a worker makes (16)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-restarts", a.max_restarts, "dead workers replaced per chunk of 2^20 "
                 "samples before the pack stops (3)")->check(CLI::Range(0, 1000));
  app.add_flag("--overwrite", a.overwrite, "replace a pack already in the output folder");
  app.add_option("--dataset-lib", a.dataset_lib, "a library of your datasets, built with "
                 "mploader_add_dataset_plugin: pack one of them");
  app.add_option("--dataset", a.dataset, "with --dataset-lib: the dataset's registered name");
  app.add_option("--dataset-config", a.dataset_config, "with --dataset-lib: the text its "
                 "factory is given");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (a.input.empty() == a.dataset_lib.empty() || a.dataset_lib.empty() != a.dataset.empty()) {
    std::cerr << "mploader-pack: give an input, or --dataset-lib with --dataset (not both)\n"
              << app.help();
    return 2;
  }
  try {
    pack(a);
  } catch (const mploader::OptionError& e) {
    std::cerr << "\n" << with_prefix(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "\n" << with_prefix(e.what()) << "\n";
    return 1;
  }
  return 0;
}
