// PackWriter (pack_writer.h): shards written whole, renamed into place, and recorded.
#include "shards/pack_writer.h"
#include "shards/text.h"

#include "remote/manifest.h"
#include "remote/sha256.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace mploader::shards::detail {
namespace {

namespace fs = std::filesystem;
using remote::detail::Sha256;

const char* const kPackName = "mploader-pack.json";
const char* const kProgressName = "mploader-pack.progress.json";
const char* const kManifestName = "mploader-manifest.json";

[[noreturn]] void cannot_write(const std::string& path, int err) {
  throw OptionError("output", mploader::detail::message(
                                  "mploader-pack", "cannot write " + in_quotes(path) + " (" +
                                                       std::strerror(err) + ")",
                                  "Check the folder's space and permissions"));
}

// Writes `text` to `path` durably: a temporary file, synced, renamed over it.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(tmp, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      cannot_write(tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) cannot_write(tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) cannot_write(path, errno);
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_pack_file(const std::string& name) {
  return name.rfind("shard-", 0) == 0 &&
         (name.find(".tar") != std::string::npos || name.find(".idx") != std::string::npos);
}

int key_digits_for(int64_t samples) {
  int digits = 1;
  for (int64_t v = samples > 0 ? samples - 1 : 0; v >= 10; v /= 10) ++digits;
  return std::max(9, digits);
}

std::string key_of(int64_t position, int digits) {
  std::string s = std::to_string(position);
  return std::string(static_cast<size_t>(std::max(0, digits - static_cast<int>(s.size()))), '0') + s;
}

}  // namespace

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

struct PackWriter::OpenShard {
  int64_t number = 0;
  int64_t first_sample = 0;
  int64_t samples = 0;
  uint64_t bytes = 0;
  std::FILE* tar = nullptr;
  Sha256 tar_hash;
  std::string index;  // the records
  std::string tar_part;

  void put(const void* data, size_t n) {
    if (n == 0) return;
    if (std::fwrite(data, 1, n, tar) != n) cannot_write(tar_part, errno);
    tar_hash.update(data, n);
    bytes += n;
  }
  ~OpenShard() {
    if (tar != nullptr) std::fclose(tar);
  }
};

PackWriter::PackWriter(PackWriterOptions options) : options_(std::move(options)) {
  if (options_.shard_bytes < 4096) {
    throw OptionError("shard_bytes", "a shard size of " + std::to_string(options_.shard_bytes) +
                                         " bytes is too small: give at least 4 KiB "
                                         "(--shard-size 256MB is usual)");
  }
  pack_.samples = options_.samples;
  pack_.key_digits = key_digits_for(options_.samples);
  pack_.settings = nlohmann::json::parse(options_.settings).dump();
  resume_or_start();
}

PackWriter::~PackWriter() = default;

void PackWriter::resume_or_start() {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec || !fs::is_directory(options_.dir)) cannot_write(options_.dir, ec ? ec.value() : ENOTDIR);
  const std::string progress = path_in(options_.dir, kProgressName);
  const bool finished = fs::exists(path_in(options_.dir, kPackName));
  if (!options_.overwrite && finished) {
    throw OptionError("output", mploader::detail::message(
        "mploader-pack", in_quotes(options_.dir) + " holds a finished pack",
        "Write to another folder, or give --overwrite to replace it"));
  }
  if (!finished && fs::exists(progress)) {
    PackDescription done = parse_pack(read_whole(progress), progress, /*partial=*/true);
    if (done.settings != pack_.settings && !options_.overwrite) {
      throw OptionError("output", mploader::detail::message(
          "mploader-pack", in_quotes(options_.dir) + " holds a stopped pack made with other "
              "input or options (" + done.settings + ")",
          "Run the same command again to finish it, write to another folder, or give "
          "--overwrite to start again"));
    }
    if (done.settings == pack_.settings) {
      for (const PackedShard& s : done.shards) {
        if (options_.publish) break;  // published and removed here
        const std::string tar = path_in(options_.dir, s.tar);
        if (fs::file_size(tar, ec) != static_cast<uintmax_t>(s.tar_bytes) || ec) {
          throw OptionError("output", mploader::detail::message(
              "mploader-pack", "the stopped pack's shard " + in_quotes(tar) +
                                   " is missing or not the size its progress file records",
              "Give --overwrite to start again"));
        }
      }
      pack_.shards = done.shards;
      pack_.fields = done.fields;
      if (!pack_.shards.empty()) {
        next_sample_ = pack_.shards.back().first_sample + pack_.shards.back().samples;
      }
    }
  }
  // Whatever else a shard's name has here is stale: a shard not recorded, parts, old packs.
  for (const auto& entry : fs::directory_iterator(options_.dir)) {
    const std::string name = entry.path().filename().string();
    bool recorded = false;
    for (const PackedShard& s : pack_.shards) recorded = recorded || name == s.tar || name == s.index;
    const bool stale_pack = options_.overwrite && (name == kPackName || name == kManifestName ||
                                                    name == kProgressName);
    if ((is_pack_file(name) && !recorded) || stale_pack) fs::remove(entry.path(), ec);
  }
}

void PackWriter::check_fields(const std::vector<PackedField>& fields) const {
  bool same = fields.size() == pack_.fields.size();
  for (size_t f = 0; same && f < fields.size(); ++f) {
    same = fields[f].name == pack_.fields[f].name && fields[f].kind == pack_.fields[f].kind;
  }
  if (!same) {
    std::string want, got;
    for (const PackedField& f : pack_.fields) want += " " + f.name + ":" + kind_name(f.kind);
    for (const PackedField& f : fields) got += " " + f.name + ":" + kind_name(f.kind);
    throw OptionError("dataset", mploader::detail::message(
        "mploader-pack", "sample " + std::to_string(next_sample_) + " has the fields" + got +
                             " where the pack's samples have" + want,
        "Every sample must have the same fields, each of one kind"));
  }
}

void PackWriter::add(const std::vector<PackedField>& fields,
                     const std::vector<std::string_view>& members) {
  if (pack_.fields.empty()) {
    for (const PackedField& f : fields) {
      if (f.name.empty() || f.name.find('/') != std::string::npos) {
        throw OptionError("field", "the field name " + in_quotes(f.name) + " cannot name a tar "
                                   "member: give fields names without '/'");
      }
    }
    pack_.fields = fields;
  }
  check_fields(fields);
  uint64_t sample_bytes = 0;
  for (std::string_view m : members) sample_bytes += 512 + m.size() + tar_padding(m.size());
  if (open_ && open_->samples > 0 &&
      open_->bytes + sample_bytes + kTarEndBytes > static_cast<uint64_t>(options_.shard_bytes)) {
    close_shard();
  }
  if (!open_) open_shard();
  const std::string key = key_of(next_sample_, pack_.key_digits);
  std::vector<MemberSpan> spans;
  Sha256 sample_hash;
  static const char zeros[512] = {};
  for (size_t f = 0; f < members.size(); ++f) {
    const auto* data = reinterpret_cast<const uint8_t*>(members[f].data());
    const std::string name =
        key + "." + fields[f].name + "." + member_extension(fields[f].kind, data, members[f].size());
    open_->put(tar_header(name, members[f].size()).data(), 512);
    spans.push_back(MemberSpan{open_->bytes, members[f].size()});
    open_->put(members[f].data(), members[f].size());
    open_->put(zeros, tar_padding(members[f].size()));
    sample_hash.update(members[f].data(), members[f].size());
  }
  append_record(open_->index, spans, sample_hash.digest());
  ++open_->samples;
  ++next_sample_;
}

void PackWriter::open_shard() {
  open_ = std::make_unique<OpenShard>();
  open_->number = shards_done();
  open_->first_sample = next_sample_;
  open_->tar_part = path_in(options_.dir, shard_tar_name(open_->number)) + ".part";
  open_->tar = std::fopen(open_->tar_part.c_str(), "wbe");
  if (open_->tar == nullptr) cannot_write(open_->tar_part, errno);
}

void PackWriter::close_shard() {
  static const char zeros[kTarEndBytes] = {};
  OpenShard& s = *open_;
  s.put(zeros, kTarEndBytes);
  if (std::fflush(s.tar) != 0 || ::fsync(::fileno(s.tar)) != 0) cannot_write(s.tar_part, errno);
  std::fclose(s.tar);
  s.tar = nullptr;
  PackedShard done;
  done.tar = shard_tar_name(s.number);
  done.index = shard_index_name(s.number);
  done.tar_bytes = static_cast<int64_t>(s.bytes);
  done.tar_sha256 = s.tar_hash.hex();
  done.first_sample = s.first_sample;
  done.samples = s.samples;
  const std::string index =
      index_header(pack_.fields.size(), s.first_sample, s.samples, done.tar_bytes) + s.index;
  Sha256 index_hash;
  index_hash.update(index.data(), index.size());
  done.index_sha256 = index_hash.hex();
  done.index_bytes = static_cast<int64_t>(index.size());
  write_atomically(path_in(options_.dir, done.index), index);
  if (::rename(s.tar_part.c_str(), path_in(options_.dir, done.tar).c_str()) != 0) {
    cannot_write(path_in(options_.dir, done.tar), errno);
  }
  open_.reset();
  if (options_.publish) {
    options_.publish(done.index, done.index_sha256);
    options_.publish(done.tar, done.tar_sha256);
  }
  pack_.shards.push_back(done);
  write_progress(kProgressName);
  if (options_.publish) {
    std::error_code ec;
    fs::remove(path_in(options_.dir, done.index), ec);
    fs::remove(path_in(options_.dir, done.tar), ec);
  }
}

void PackWriter::write_progress(const std::string& name) const {
  write_atomically(path_in(options_.dir, name), pack_text(pack_));
}

void PackWriter::finish() {
  if (next_sample_ != options_.samples) {
    throw OptionError("samples", mploader::detail::message(
        "mploader-pack", "the pack ends after " + std::to_string(next_sample_) + " of " +
                             std::to_string(options_.samples) + " samples",
        "Run the command again: it resumes after the last whole shard"));
  }
  if (open_) close_shard();
  std::vector<remote::detail::ManifestEntry> entries;
  for (const PackedShard& s : pack_.shards) {
    entries.push_back({s.tar, s.tar_bytes, s.samples, s.tar_sha256});
  }
  write_atomically(path_in(options_.dir, kManifestName), remote::detail::manifest_text(entries));
  write_atomically(path_in(options_.dir, kPackName), pack_text(pack_));
  if (options_.publish) {
    options_.publish(kManifestName, "");
    options_.publish(kPackName, "");  // last: a reader never finds a description before its shards
  }
  std::error_code ec;
  fs::remove(path_in(options_.dir, kProgressName), ec);
}

}  // namespace mploader::shards::detail
