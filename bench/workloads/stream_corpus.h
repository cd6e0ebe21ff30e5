// The stream workload: language-model windows (mploader::TokenStream) over a byte-level corpus
// made once from the machine's Debian text files, every regular file under
// /usr/share/doc/*/copyright and /usr/share/common-licenses (symlinks skipped, so that no text
// is counted twice), in sorted path order.
//
// corpus.bin holds one uint16 id per byte (vocabulary 256), little-endian, no header: the
// layout nanoGPT's train.bin has, which bench/pytorch_dataloader.py reads with np.memmap as
// well.
// Samples: "input" and "target", int64 [context].
#pragma once

#include <mploader/dataset.h>

#include <cstdint>
#include <memory>
#include <string>

namespace bench {

// Ids of the byte-level vocabulary: one per byte value.
constexpr int64_t kStreamVocab = 256;
// Windows per TokenStream shard: the unit the Loader shares out among workers.
constexpr int64_t kStreamWindowsPerShard = 64;

// $MPLOADER_BENCH_CACHE, else $XDG_CACHE_HOME/mploader-bench, else ~/.cache/mploader-bench;
// then "debian-text/corpus.bin".
std::string default_stream_corpus();

// Writes `path` from the Debian text files unless it exists. Written to a temporary name
// beside it and renamed into place, so an interrupted run leaves no half corpus. Throws
// std::runtime_error naming the file or folder and the fix.
void ensure_stream_corpus(const std::string& path);

// TokenStream({path}, {context, kStreamVocab, kStreamWindowsPerShard}); throws UsageError naming
// --context when the corpus is too short for one window of `context` tokens.
std::shared_ptr<mploader::Dataset> make_stream_dataset(const std::string& path, int64_t context);

}  // namespace bench
