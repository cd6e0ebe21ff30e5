// The tokens workload's data: a real text corpus cut into paragraphs (runs of non-blank lines),
// each tokenised by whitespace into ids of a vocabulary built in order of first appearance.
// Paragraphs vary from one word to hundreds, which is what length bucketing is for.
// TokenCorpus is read once, before any fork; TokensDataset::get only reads it, so concurrent
// get() calls are safe.
#pragma once

#include <mploader/dataset.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// Default corpus: the license texts every Debian system carries.
inline const char* const kDefaultTokenCorpus = "/usr/share/common-licenses";

struct TokenCorpus {
  std::vector<std::vector<int64_t>> sequences;  // token ids per paragraph, none empty
  size_t vocabulary = 0;
  std::vector<std::string> files;  // read, in order; symlinks to a file already read skipped
};

// `path` is a text file or a folder of them (not recursive; regular files and links to them).
// Throws UsageError naming --data when it is missing, unreadable or holds no words.
TokenCorpus read_token_corpus(const std::string& path);

// "tokens": int64 [length] (the paragraph's token ids).
class TokensDataset : public mploader::Dataset {
 public:
  explicit TokensDataset(std::shared_ptr<const TokenCorpus> corpus) : corpus_(std::move(corpus)) {}
  size_t size() const override { return corpus_->sequences.size(); }
  mploader::Sample get(int64_t index) override;
  std::vector<int64_t> lengths() const;

 private:
  std::shared_ptr<const TokenCorpus> corpus_;
};

}  // namespace bench
