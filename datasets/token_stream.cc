// TokenStream: language-model windows from memory-mapped token files
// (include/mploader/token_stream.h).
#include "core/recipe_json.h"
#include "core/remote_files.h"
#include "ipc/unique_fd.h"
#include "util/errors.h"
#include "util/splitmix.h"

#include <mploader/errors.h>
#include <mploader/loading_context.h>
#include <mploader/registry.h>
#include <mploader/token_stream.h>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mploader {
namespace {

int64_t id_bytes(TokenType type) { return type == TokenType::kUInt16 ? 2 : 4; }
const char* type_name(TokenType type) { return type == TokenType::kUInt16 ? "uint16" : "uint32"; }

// OptionError(option, "mploader: TokenStream: <what>. <fix>.").
[[noreturn]] void refuse(const char* option, const std::string& what, const std::string& fix) {
  throw OptionError(option, detail::message("TokenStream", what, fix));
}

// Two values into one seed, for the per-(seed, epoch, file) offset of sequential windows.

int64_t file_bytes(const std::string& path, const std::string& cache_dir) {
  if (detail::names_url(path)) {
    return detail::require_remote_file_access(path, "TokenStream")
        .size_of(path, cache_dir);
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    refuse("files", "cannot read token file '" + path + "' (stat: " + std::strerror(errno) + ")",
           "Check the path");
  }
  if (!S_ISREG(st.st_mode)) {
    refuse("files", "'" + path + "' is not a regular file", "Give a token file");
  }
  return static_cast<int64_t>(st.st_size);
}

int64_t tokens_of(const std::string& path, int64_t bytes, TokenType type) {
  const int64_t width = id_bytes(type);
  if (bytes % width != 0) {
    refuse("files",
           "token file '" + path + "' is " + std::to_string(bytes) +
               " bytes, not a multiple of " + std::to_string(width) + " (" + type_name(type) +
               " ids): it was cut short, or written with another id width",
           "Write it again, or set TokenStreamOptions::type to the width it was written with");
  }
  return bytes / width;
}

// Sequential windows of a file of `tokens`: how many, and the room left for a moving offset.
int64_t sequential_windows(int64_t tokens, int64_t context) {
  return std::max<int64_t>(1, (tokens - context) / context);
}

}  // namespace

// One file, mapped read-only: its pages are the page cache's, shared by every process.
struct TokenStream::Mapping {
  const uint8_t* base = nullptr;
  size_t bytes = 0;
  std::unique_ptr<detail::RemoteFile> remote;  // a URL's cached copy, kept while mapped
  ~Mapping() {
    if (base != nullptr) munmap(const_cast<uint8_t*>(base), bytes);
  }
};

TokenStream::TokenStream(std::vector<std::string> files, TokenStreamOptions options)
    : TokenStream(std::move(files), std::move(options), {}) {}

TokenStream::TokenStream(std::vector<std::string> files, TokenStreamOptions options,
                         std::vector<int64_t> known_tokens)
    : files_(std::move(files)), options_(std::move(options)) {
  if (files_.empty()) refuse("files", "no token files given", "Pass at least one path");
  if (options_.context < 1) {
    refuse("context", "context is " + std::to_string(options_.context),
           "Give a context of 1 or more tokens a window");
  }
  if (options_.windows_per_shard < 0 || options_.vocab_size < 0) {
    refuse(options_.windows_per_shard < 0 ? "windows_per_shard" : "vocab_size",
           "windows_per_shard is " + std::to_string(options_.windows_per_shard) +
               " and vocab_size " + std::to_string(options_.vocab_size),
           "Give 0 or more for each (0: one shard a file, no vocabulary check)");
  }
  std::vector<ShardInfo> shards;
  for (size_t f = 0; f < files_.size(); ++f) {
    const int64_t tokens =
        f < known_tokens.size()
            ? known_tokens[f]
            : tokens_of(files_[f], file_bytes(files_[f], options_.cache_dir), options_.type);
    if (tokens < options_.context + 1) {
      refuse("files",
             "token file '" + files_[f] + "' holds " + std::to_string(tokens) +
                 " tokens; a window of context " + std::to_string(options_.context) +
                 " needs " + std::to_string(options_.context + 1) +
                 " (input and target shifted by one)",
             "Use a smaller context or leave the file out");
    }
    tokens_.push_back(tokens);
    windows_.push_back(sequential_windows(tokens, options_.context));
    const int64_t per = options_.windows_per_shard > 0 ? options_.windows_per_shard : windows_[f];
    for (int64_t first = 0; first < windows_[f]; first += per) {
      const int64_t n = std::min(per, windows_[f] - first);
      shards.push_back({files_[f] + (per == windows_[f] ? "" : "@" + std::to_string(first)), n});
      shard_file_.push_back(f);
      shard_first_.push_back(first);
    }
  }
  mappings_.resize(files_.size());
  declare_shards(std::move(shards));
}

TokenStream::~TokenStream() = default;

std::optional<SampleLayout> TokenStream::sample_layout() const {
  return SampleLayout{{"input", at::kLong, {options_.context}},
                      {"target", at::kLong, {options_.context}}};
}

size_t TokenStream::file_of(int64_t index) const { return shard_file_[locate(index).shard]; }

int64_t TokenStream::window_start(int64_t index, uint64_t seed, uint64_t epoch) const {
  const ShardPosition at = locate(index);
  const size_t f = shard_file_[at.shard];
  const int64_t c = options_.context;
  if (options_.windows == TokenWindows::kRandom) {
    const uint64_t room = static_cast<uint64_t>(tokens_[f] - c);  // starts 0 .. tokens - c - 1
    return static_cast<int64_t>(sample_seed(seed, epoch, index) % room);
  }
  const int64_t slack = tokens_[f] - 1 - windows_[f] * c;
  const int64_t span = std::min(c - 1, slack) + 1;  // offsets 0 .. span - 1
  const uint64_t file_seed = detail::mix_seed(detail::mix_seed(seed, epoch), f);
  const int64_t offset = static_cast<int64_t>(file_seed % static_cast<uint64_t>(span));
  return offset + (shard_first_[at.shard] + at.sample) * c;
}

const TokenStream::Mapping& TokenStream::mapping(size_t f) {
  std::lock_guard<std::mutex> lock(mapping_mutex_);  // uncontended after the first use
  if (mappings_[f]) return *mappings_[f];
  auto mapped = std::make_unique<Mapping>();
  const size_t bytes = static_cast<size_t>(tokens_[f] * id_bytes(options_.type));
  if (detail::names_url(files_[f])) {
    mapped->remote = detail::require_remote_file_access(files_[f], "TokenStream")
                         .open(files_[f], static_cast<int64_t>(bytes), options_.cache_dir);
  }
  const std::string& path = mapped->remote ? mapped->remote->path() : files_[f];
  ipc::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    throw Error("mploader::TokenStream: cannot open token file '" + path + "' (open: " +
                std::strerror(errno) + "); it was there when the dataset was built: restore it");
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    throw Error("mploader::TokenStream: token file '" + path + "' is now " +
                std::to_string(st.st_size) + " bytes, " + std::to_string(bytes) +
                " when the dataset was built: it changed under the loader. Rebuild the dataset "
                "(and start the epoch afresh) once the file is complete");
  }
  void* base = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    throw Error("mploader::TokenStream: mmap of '" + path + "' (" + std::to_string(bytes) +
                " bytes) failed: " + std::strerror(errno));
  }
  madvise(base, bytes, options_.windows == TokenWindows::kRandom ? MADV_RANDOM : MADV_NORMAL);
  mapped->base = static_cast<const uint8_t*>(base);
  mapped->bytes = bytes;
  mappings_[f] = std::move(mapped);
  return *mappings_[f];
}

namespace {

// Copies context + 1 ids from `ids` into input (the first context) and target (the last).
template <typename Id>
void copy_window(const Id* ids, int64_t context, int64_t vocab, int64_t* input, int64_t* target,
                 const std::string& path, int64_t start) {
  for (int64_t i = 0; i <= context; ++i) {
    const int64_t id = static_cast<int64_t>(ids[i]);
    if (vocab > 0 && id >= vocab) {
      throw Error("mploader::TokenStream: token " + std::to_string(start + i) + " of '" + path +
                  "' is " + std::to_string(id) + ", outside the vocabulary of " +
                  std::to_string(vocab) + " (TokenStreamOptions::vocab_size): the file was "
                  "written with another tokenizer or id width, or vocab_size is too small");
    }
    if (i < context) input[i] = id;
    if (i > 0) target[i - 1] = id;
  }
}

}  // namespace

void TokenStream::write(int64_t index, SampleWriter& out) {
  const std::optional<LoadingContext> ctx = loading_context();
  const int64_t start = window_start(index, ctx ? ctx->seed : 0, ctx ? ctx->epoch : 0);
  const size_t f = file_of(index);
  const Mapping& m = mapping(f);
  int64_t* input = out.data<int64_t>(0);
  int64_t* target = out.data<int64_t>(1);
  const int64_t c = options_.context, vocab = options_.vocab_size;
  if (options_.type == TokenType::kUInt16) {
    copy_window(reinterpret_cast<const uint16_t*>(m.base) + start, c, vocab, input, target,
                files_[f], start);
  } else {
    copy_window(reinterpret_cast<const uint32_t*>(m.base) + start, c, vocab, input, target,
                files_[f], start);
  }
}

// Spawned workers rebuild the dataset from this JSON text.
std::optional<DatasetRecipe> TokenStream::recipe() const {
  nlohmann::json j{{"files", files_},
                   {"type", type_name(options_.type)},
                   {"context", options_.context},
                   {"vocab_size", options_.vocab_size},
                   {"windows", options_.windows == TokenWindows::kRandom ? "random" : "sequential"},
                   {"windows_per_shard", options_.windows_per_shard},
                   {"cache_dir", options_.cache_dir},
                   {"file_tokens", tokens_}};
  return DatasetRecipe{"mploader.TokenStream", j.dump()};
}

void TokenStream::prefetch_shards(const std::vector<size_t>& shards) {
  std::vector<std::pair<std::string, int64_t>> remote;
  {
    std::lock_guard<std::mutex> lock(mapping_mutex_);
    for (size_t shard : shards) {
      if (shard >= shard_file_.size()) continue;
      const size_t f = shard_file_[shard];
      const bool listed = !remote.empty() && remote.back().first == files_[f];
      if (mappings_[f] || listed || !detail::names_url(files_[f])) continue;
      remote.emplace_back(files_[f], tokens_[f] * id_bytes(options_.type));
    }
  }
  if (remote.empty()) return;
  detail::require_remote_file_access(remote.front().first, "TokenStream")
      .prefetch(remote, options_.cache_dir);
}

std::shared_ptr<TokenStream> TokenStream::from_recipe(const std::string& config) {
  return detail::read_recipe("mploader.TokenStream", [&] {
    const nlohmann::json j = nlohmann::json::parse(config);
    TokenStreamOptions o;
    o.type =
        j.at("type").get<std::string>() == "uint32" ? TokenType::kUInt32 : TokenType::kUInt16;
    o.context = j.at("context").get<int64_t>();
    o.vocab_size = j.at("vocab_size").get<int64_t>();
    o.windows = j.at("windows").get<std::string>() == "random" ? TokenWindows::kRandom
                                                               : TokenWindows::kSequential;
    o.windows_per_shard = j.at("windows_per_shard").get<int64_t>();
    o.cache_dir = j.at("cache_dir").get<std::string>();
    // The sizes the training process read: a spawned worker asks no store again.
    return std::shared_ptr<TokenStream>(new TokenStream(
        j.at("files").get<std::vector<std::string>>(), o,
        j.at("file_tokens").get<std::vector<int64_t>>()));
  });
}

namespace {

std::shared_ptr<Dataset> token_stream_from_recipe(const std::string& config) {
  return TokenStream::from_recipe(config);
}

}  // namespace

MPLOADER_REGISTER_DATASET("mploader.TokenStream", token_stream_from_recipe);

}  // namespace mploader
