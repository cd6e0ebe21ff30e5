// Reading and tokenising the tokens workload's corpus (see token_corpus.h).
#include "bench/tokens/token_corpus.h"

#include "bench/run_config.h"

#include <ATen/ops/tensor.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace bench {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> corpus_files(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw UsageError("--data: '" + path + "' does not exist; give a text file or a folder of "
                     "them, e.g. --data " + kDefaultTokenCorpus);
  }
  if (!fs::is_directory(st)) return {fs::path(path)};
  std::vector<fs::path> files;
  std::set<fs::path> seen;  // GPL -> GPL-3 and the like: each text once
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    if (!fs::is_regular_file(p, ec)) continue;
    if (seen.insert(fs::canonical(p, ec)).second) files.push_back(p);
  }
  return files;
}

// Adds the paragraphs of one file.
void read_file(const fs::path& file, std::unordered_map<std::string, int64_t>& vocabulary,
               TokenCorpus& corpus) {
  std::ifstream in(file);
  if (!in) throw UsageError("--data: cannot read '" + file.string() + "'; check permissions");
  std::vector<int64_t> paragraph;
  std::string line, word;
  auto close_paragraph = [&] {
    if (!paragraph.empty()) corpus.sequences.push_back(std::move(paragraph));
    paragraph.clear();
  };
  while (std::getline(in, line)) {
    std::istringstream words(line);
    bool any = false;
    while (words >> word) {
      any = true;
      auto it = vocabulary.emplace(word, static_cast<int64_t>(vocabulary.size())).first;
      paragraph.push_back(it->second);
    }
    if (!any) close_paragraph();
  }
  close_paragraph();
}

}  // namespace

TokenCorpus read_token_corpus(const std::string& path) {
  TokenCorpus corpus;
  std::unordered_map<std::string, int64_t> vocabulary;
  for (const fs::path& file : corpus_files(path)) {
    read_file(file, vocabulary, corpus);
    corpus.files.push_back(file.string());
  }
  if (corpus.sequences.empty()) {
    throw UsageError("--data: '" + path + "' holds no words; give a text file or a folder of "
                     "text files");
  }
  corpus.vocabulary = vocabulary.size();
  return corpus;
}

mploader::Sample TokensDataset::get(int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= size()) {
    throw std::out_of_range("tokens: index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(size()) + ")");
  }
  return mploader::Sample{{"tokens", at::tensor(corpus_->sequences[index], at::kLong)}};
}

std::vector<int64_t> TokensDataset::lengths() const {
  std::vector<int64_t> out;
  out.reserve(size());
  for (const auto& s : corpus_->sequences) out.push_back(static_cast<int64_t>(s.size()));
  return out;
}

}  // namespace bench
