// The stream workload's corpus (made once, cached) and its TokenStream.
#include "bench/workloads/stream_corpus.h"

#include "bench/run_config.h"
#include "bench/workloads/jpeg_dataset.h"

#include <mploader/token_stream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace bench {

namespace {

constexpr const char* kDocRoot = "/usr/share/doc";
constexpr const char* kLicenses = "/usr/share/common-licenses";

bool is_plain_file(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() == fs::file_type::regular;
}

// Regular files under `root` (root itself when it is one); symlinks are neither followed nor
// taken, so a license linked under two names is read once.
void collect(const fs::path& root, std::vector<fs::path>& out) {
  std::error_code ec;
  if (is_plain_file(root)) {
    out.push_back(root);
    return;
  }
  if (fs::symlink_status(root, ec).type() != fs::file_type::directory) return;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_plain_file(it->path())) out.push_back(it->path());
  }
}

// Every source file, in sorted order so that the corpus is the same on every run.
std::vector<fs::path> corpus_sources() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(kDocRoot, ec), end; !ec && it != end; it.increment(ec)) {
    collect(it->path() / "copyright", files);
  }
  collect(kLicenses, files);
  std::sort(files.begin(), files.end());
  return files;
}

// Appends one uint16 little-endian id per byte of `file` to `out`.
void append_bytes(const fs::path& file, std::ofstream& out, int64_t& tokens) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<char> ids(bytes.size() * 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    ids[2 * i] = bytes[i];  // the id is the byte value: low byte first, high byte 0
    ids[2 * i + 1] = 0;
  }
  out.write(ids.data(), static_cast<std::streamsize>(ids.size()));
  tokens += static_cast<int64_t>(bytes.size());
}

void write_corpus(const std::string& tmp, const std::vector<fs::path>& files) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  int64_t tokens = 0;
  for (const fs::path& f : files) append_bytes(f, out, tokens);
  out.close();
  if (!out) {
    throw std::runtime_error("stream: cannot write " + tmp +
                             "; check the folder's free space and permissions, or set "
                             "MPLOADER_BENCH_CACHE to another folder");
  }
}

}  // namespace

std::string default_stream_corpus() { return bench_cache_dir() + "/debian-text/corpus.bin"; }

void ensure_stream_corpus(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return;
  const std::vector<fs::path> files = corpus_sources();
  if (files.empty()) {
    throw std::runtime_error(std::string("stream: no text files under ") + kDocRoot +
                             "/*/copyright or " + kLicenses + " to make " + path +
                             " from; install a few Debian packages (base-files has the "
                             "licenses), or put a uint16 token file at that path");
  }
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    write_corpus(tmp, files);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  // rename() replaces atomically: a bench racing us wrote the same bytes.
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("stream: cannot create " + path + " (" + ec.message() +
                             "); set MPLOADER_BENCH_CACHE to a writable folder");
  }
}

std::shared_ptr<mploader::Dataset> make_stream_dataset(const std::string& path, int64_t context) {
  mploader::TokenStreamOptions options;
  options.type = mploader::TokenType::kUInt16;
  options.context = context;
  options.vocab_size = kStreamVocab;
  options.windows_per_shard = kStreamWindowsPerShard;
  std::error_code ec;
  const auto bytes = static_cast<int64_t>(fs::file_size(path, ec));
  // TokenStream would refuse it too; here the message names the bench's option.
  if (!ec && bytes / 2 < context + 1) {
    throw UsageError("--context: " + std::to_string(context) + " tokens is more than the " +
                     std::to_string(bytes / 2) + "-token corpus " + path +
                     " holds for one window; give at most --context " +
                     std::to_string(bytes / 2 - 1));
  }
  return std::make_shared<mploader::TokenStream>(std::vector<std::string>{path}, options);
}

}  // namespace bench
