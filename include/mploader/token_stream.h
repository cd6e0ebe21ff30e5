/// @file
/// TokenStream: training windows for a language model from binary token files, the layout
/// GPT-style trainers write (nanoGPT's train.bin: token ids back to back, uint16 or uint32,
/// little-endian, no header).
///
///   mploader::TokenStreamOptions to;
///   to.context = 1024;                 // tokens per window
///   to.vocab_size = 50257;             // ids at or above it are an error
///   to.windows_per_shard = 256;        // shards of 256 windows: shuffled, split among ranks
///   auto data = std::make_shared<mploader::TokenStream>(
///       std::vector<std::string>{"/data/owt/train.bin"}, to);
///   mploader::LoaderOptions o;
///   o.batch_size = 12;
///   o.num_workers = 4;
///   o.shuffle = true;                  // shard order per (seed, epoch)
///   mploader::Loader loader(data, o);  // batches of "input" and "target", int64 [12, 1024]
///
/// The files are memory-mapped read-only in each worker: the pages are the page cache's, shared
/// by every worker and every job on the machine, and each window is converted straight into the
/// batch's slot. A window of `context` tokens starting at t gives input = tokens[t, t + context)
/// and target = tokens[t + 1, t + context + 1).
#pragma once

#include <mploader/streaming.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mploader {

/// The width of the ids in a token file.
enum class TokenType {
  kUInt16,  ///< 2 bytes per id (vocabularies up to 65,536: GPT-2's 50,257).
  kUInt32,  ///< 4 bytes per id.
};

/// Where the windows of an epoch start.
enum class TokenWindows {
  /// Back to back from an offset drawn per (seed, epoch, file) in [0, context) (in what is
  /// left over by the whole windows, for a file under 2 x context tokens), so that window
  /// boundaries move from one epoch to the next. A file of n tokens has
  /// max(1, (n - context) / context) windows in every epoch.
  kSequential,
  /// Each window starts at a position drawn per (seed, epoch, sample): the windows overlap at
  /// random, as nanoGPT's get_batch draws them. As many per file as kSequential has.
  kRandom,
};

/// How TokenStream reads and cuts its files.
struct TokenStreamOptions {
  TokenType type = TokenType::kUInt16;  ///< The id width the files were written with.
  int64_t context = 1024;  ///< Tokens per window (input and target each); >= 1.
  /// Ids must be below this; 0: not checked. A window holding a larger id fails its batch
  /// with an error naming the file, the token's position and its value.
  int64_t vocab_size = 0;
  TokenWindows windows = TokenWindows::kSequential;  ///< See TokenWindows.
  /// Windows per shard: each file is cut into shards of this many windows (the last one
  /// shorter), the units a Loader shuffles and shares out among ranks and workers. 0: a file
  /// is one shard.
  int64_t windows_per_shard = 0;
  /// Files named by URL (http://, https://, s3://; the program links mploader::remote) are
  /// downloaded whole into the shard cache in this folder, once per machine, then mapped like
  /// local files; each worker downloads the files its stream reads next while it reads the
  /// current one. Empty: MPLOADER_CACHE_DIR, else ~/.cache/mploader/shards. The endpoint,
  /// credentials and cache limit come from the environment (docs/remote-data.md).
  std::string cache_dir;
};

/// A StreamingDataset of fixed-length (input, target) windows over token files; see the file
/// comment. Sample layout: "input" and "target", int64 [context].
///
/// The constructor checks every file (throws OptionError naming the option or file and the
/// fix): it must exist, hold a whole number of ids, and hold at least context + 1 of them.
/// Each process maps a file on first use; a file that disappeared or changed size since the
/// constructor fails the batch with an error naming it. get() and write() may be called from
/// several threads at once (libtorch's thread loader does); each worker process has its own
/// copy.
class TokenStream : public StreamingDataset {
 public:
  /// Reads the files' sizes (a URL's from its store, without downloading it); see the class
  /// comment for what is refused.
  TokenStream(std::vector<std::string> files, TokenStreamOptions options = {});
  ~TokenStream() override;
  TokenStream(const TokenStream&) = delete;             ///< Owns mappings.
  TokenStream& operator=(const TokenStream&) = delete;  ///< Owns mappings.

  std::optional<SampleLayout> sample_layout() const override;
  void write(int64_t index, SampleWriter& out) override;
  std::optional<DatasetRecipe> recipe() const override;
  /// Starts downloading the files named by URL among those of `shards` (a worker's next
  /// shards, from the Loader) in the background; local files need nothing.
  void prefetch_shards(const std::vector<size_t>& shards) override;
  /// Builds the dataset from recipe()'s text, sizes included (internal: spawned workers).
  static std::shared_ptr<TokenStream> from_recipe(const std::string& config);

  /// The first token of sample `index`'s window in its file, in `epoch` of a Loader seeded
  /// `seed`; with file_of(), where a batch's sample came from.
  int64_t window_start(int64_t index, uint64_t seed, uint64_t epoch) const;
  /// The file sample `index` reads.
  size_t file_of(int64_t index) const;
  const std::vector<std::string>& files() const { return files_; }  ///< As given.
  const TokenStreamOptions& options() const { return options_; }    ///< As given.
  /// Tokens in each file.
  const std::vector<int64_t>& file_tokens() const { return tokens_; }

 private:
  struct Mapping;
  TokenStream(std::vector<std::string> files, TokenStreamOptions options,
              std::vector<int64_t> known_tokens);
  const Mapping& mapping(size_t file);

  std::vector<std::string> files_;
  TokenStreamOptions options_;
  std::vector<int64_t> tokens_;         // per file
  std::vector<int64_t> windows_;        // per file
  std::vector<size_t> shard_file_;      // per shard: its file
  std::vector<int64_t> shard_first_;    // per shard: its first window in the file
  std::mutex mapping_mutex_;  // guards mappings_ while a file is mapped
  std::vector<std::unique_ptr<Mapping>> mappings_;  // per file, mapped on first use
};

}  // namespace mploader
