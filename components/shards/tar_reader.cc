// TarReader: one tar, front to back, a sample at a time, with libarchive. Member data is read
// only when asked for; skipping seeks past it (an uncompressed tar on a seekable file).
#include "shards/tar_reader.h"
#include "shards/text.h"
#include "util/errors.h"
#include "util/file_stat.h"

#include <mploader/errors.h>

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mploader::shards::detail {
namespace {

constexpr size_t kBlockBytes = 64 * 1024;  // libarchive's read size
constexpr int64_t kTarHeaderBytes = 512;

}  // namespace

bool split_member_name(const std::string& path, std::string& key, std::string& ext) {
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.find('.', base);
  // ".hidden" has no key, "name." no extension: WebDataset drops both.
  if (dot == std::string::npos || dot == base || dot + 1 == path.size()) return false;
  key = path.substr(0, dot);
  ext = path.substr(dot + 1);
  return true;
}

TarReader::TarReader(std::string path) : path_(std::move(path)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    throw Error(in_quotes(path_) + " cannot be opened: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw Error(in_quotes(path_) + " is not a regular file");
  file_bytes_ = static_cast<int64_t>(st.st_size);
  if (file_bytes_ == 0) {
    // Likely a shard whose writer died before its first block: say so, not "no tar format".
    throw Error(in_quotes(path_) + " is empty (0 bytes), not a tar (even an empty "
                             "tar holds its end blocks)");
  }
  mtime_ns_ = mploader::detail::mtime_ns(st);
  archive_ = archive_read_new();
  if (archive_ == nullptr) throw Error("libarchive could not allocate a reader");
  archive_read_support_format_tar(archive_);
  archive_read_support_filter_all(archive_);
  if (archive_read_open_filename(archive_, path_.c_str(), kBlockBytes) != ARCHIVE_OK) {
    const std::string why = archive_error_string(archive_) ? archive_error_string(archive_) : "";
    archive_read_free(archive_);
    archive_ = nullptr;
    throw Error(in_quotes(path_) + " cannot be read as a tar (libarchive: " + why +
                             ")");
  }
  for (int i = 0; i < archive_filter_count(archive_); ++i) {
    if (archive_filter_code(archive_, i) != ARCHIVE_FILTER_NONE) compressed_ = true;
  }
}

TarReader::~TarReader() {
  if (archive_ != nullptr) archive_read_free(archive_);
}

void TarReader::fail(const std::string& what) const {
  const char* why = archive_ != nullptr ? archive_error_string(archive_) : nullptr;
  throw Error(in_quotes(path_) + ": " + what +
                           (why != nullptr ? std::string(" (libarchive: ") + why + ")" : ""));
}

bool TarReader::next_member(int64_t samples_before) {
  has_pending_ = false;
  for (;;) {
    archive_entry* entry = nullptr;
    const int r = archive_read_next_header(archive_, &entry);
    if (r == ARCHIVE_EOF) {
      check_end_blocks(samples_before);
      return false;
    }
    if (r == ARCHIVE_RETRY) {
      // libarchive found no header where the previous member's size says the next one is: a
      // size that lies. Retrying would scan on to the next valid header (GNU tar's "Skipping to
      // next header") and lose or garble members without a word.
      fail("the tar is damaged: after " + std::to_string(samples_before) + " samples, at byte " +
           std::to_string(archive_read_header_position(archive_)) + ", there is no tar header "
           "(a member's size in its header does not match its data)");
    }
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      fail("the header after sample " + std::to_string(samples_before) + " cannot be read");
    }
    const char* name = archive_entry_pathname(entry);
    std::string key, ext;
    if (archive_entry_filetype(entry) != AE_IFREG || name == nullptr ||
        !split_member_name(name, key, ext)) {
      continue;  // folders, links, devices, names without an extension: not members
    }
    pending_ = Member{name, std::move(ext), {}};
    pending_key_ = std::move(key);
    pending_size_ = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : -1;
    if (archive_entry_size_is_set(entry) && pending_size_ < 0) {
      // libarchive then reads on past the file's end (2 GB of data from a 4 KB tar).
      throw Error(in_quotes(path_) + ": member " + in_quotes(pending_.name) +
                               " has a size of " + std::to_string(pending_size_) + " bytes in its "
                               "header: the header is damaged");
    }
    // The scan reads no data, so a tar cut inside its last member would pass unnoticed: the
    // member's data must end inside the file (the header's offset is in the uncompressed tar).
    // Compared as a difference: a size near 2^63 must not overflow the sum.
    const int64_t data_start = archive_read_header_position(archive_) + kTarHeaderBytes;
    if (!compressed_ && std::max<int64_t>(pending_size_, 0) > file_bytes_ - data_start) {
      const uint64_t data_end = static_cast<uint64_t>(data_start) + pending_size_;
      throw Error(in_quotes(path_) + " is cut short: member " + in_quotes(pending_.name) +
                               " (" + std::to_string(pending_size_) + " bytes) ends past byte " +
                               std::to_string(data_end) + " but the file has " +
                               std::to_string(file_bytes_) + " bytes");
    }
    has_pending_ = true;
    return true;
  }
}

void TarReader::check_end_blocks(int64_t samples_before) const {
  // A tar ends with zero blocks, which libarchive consumes at its end; one that ends right
  // after a member's data was cut on a member boundary, and would lose its last samples.
  if (archive_filter_bytes(archive_, 0) > archive_read_header_position(archive_)) return;
  throw Error(
      in_quotes(path_) + " is cut short: it ends at byte " +
      std::to_string(archive_read_header_position(archive_)) + ", after " +
      std::to_string(samples_before) + " samples, on a member boundary without the zero "
      "blocks that end every tar, so samples after them may be missing");
}

void TarReader::read_pending(Member& out) {
  out = std::move(pending_);
  has_pending_ = false;
  const bool sized = pending_size_ >= 0;
  // The buffer grows with the data that is really there: a header's size is only a claim (a
  // compressed tar's cannot be checked against the file), and must not allocate by itself.
  const size_t want = sized ? static_cast<size_t>(pending_size_) : SIZE_MAX;
  out.bytes.resize(std::min(want, kBlockBytes));
  size_t total = 0;
  for (;;) {
    if (total == out.bytes.size()) {
      if (total == want) break;
      out.bytes.resize(std::min(want, total * 2));
    }
    const la_ssize_t n = archive_read_data(archive_, out.bytes.data() + total,
                                           out.bytes.size() - total);
    if (n < 0) {
      fail("member " + in_quotes(out.name) + " cannot be read after " + std::to_string(total) +
           " of its " + std::to_string(pending_size_) + " bytes");
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
  }
  if (sized && total < want) {
    fail("member " + in_quotes(out.name) + " is cut short: " + std::to_string(total) + " of its " +
         std::to_string(pending_size_) + " bytes are there");
  }
  out.bytes.resize(total);
}

void TarReader::skip_pending() {
  has_pending_ = false;
  if (archive_read_data_skip(archive_) != ARCHIVE_OK) {
    fail("member " + in_quotes(pending_.name) + " cannot be skipped");
  }
}

bool TarReader::next(RawSample* out) {
  if (at_end_) return false;
  if (!has_pending_ && !next_member(position_)) {
    at_end_ = true;
    return false;
  }
  const std::string key = pending_key_;
  std::vector<std::string> exts;
  if (out != nullptr) *out = RawSample{key, {}, 0};
  for (;;) {
    if (std::find(exts.begin(), exts.end(), pending_.ext) != exts.end()) {
      throw Error(in_quotes(path_) + ": sample " + in_quotes(key) + " has two members " +
                               "of extension " + in_quotes(pending_.ext) + " (the second is " +
                               in_quotes(pending_.name) + "): write each extension once per key");
    }
    exts.push_back(pending_.ext);
    if (out != nullptr) {
      out->members.emplace_back();
      read_pending(out->members.back());
      out->bytes += static_cast<int64_t>(out->members.back().bytes.size());
    } else {
      skip_pending();
    }
    if (!next_member(position_ + 1)) {
      at_end_ = true;
      break;
    }
    if (pending_key_ != key) break;
  }
  ++position_;
  return true;
}

ShardScan scan_shard(const std::string& path) {
  try {
    TarReader reader(path);
    while (reader.next(nullptr)) {
    }
    return ShardScan{reader.position(), reader.file_bytes(), reader.mtime_ns(), {}};
  } catch (const Error& e) {  // the reader's own: they name the tar and what is wrong
    throw OptionError("tar_paths",
                      mploader::detail::message("TarShards", e.what(),
                                                "Check the file (tar tvf lists what is readable "
                                                "of it) and write it again, or leave it out of "
                                                "the list"));
  }
}

}  // namespace mploader::shards::detail
