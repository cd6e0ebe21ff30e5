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
#include <sys/statvfs.h>
#include <unistd.h>

namespace mploader::shards::detail {
namespace {

namespace fs = std::filesystem;
using remote::detail::Sha256;

const char* const kPackName = "mploader-pack.json";
const char* const kProgressName = "mploader-pack.progress.json";
const char* const kManifestName = "mploader-manifest.json";

// Free bytes for an unprivileged writer on the file system that holds `path`, or -1.
int64_t free_bytes(const std::string& path) {
  struct statvfs st {};
  const fs::path folder = fs::path(path).parent_path();
  if (::statvfs(folder.empty() ? "." : folder.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

// A write that failed: an Error (the pack stops; what it wrote whole is kept for a resume).
[[noreturn]] void cannot_write(const std::string& path, int err) {
  std::string what = "cannot write " + in_quotes(path) + " (" + std::strerror(err) + ")";
  if (err == ENOSPC || err == EDQUOT) {
    const int64_t left = free_bytes(path);
    if (left >= 0) what += " with " + std::to_string(left) + " bytes free on its file system";
    throw Error(mploader::detail::message(
        "mploader-pack", what,
        "Free space on that disk (or copy the folder to one with room and give that folder "
        "as the output), then run the command again: it resumes after the last whole shard"));
  }
  throw Error(mploader::detail::message("mploader-pack", what,
                                        "Check the folder's space and permissions"));
}

// An output folder that cannot be made or is not a folder: what the user gave is wrong.
[[noreturn]] void cannot_use_folder(const std::string& dir, int err) {
  throw OptionError("output", mploader::detail::message(
                                  "mploader-pack", "cannot make the output folder " +
                                                       in_quotes(dir) + " (" +
                                                       std::strerror(err) + ")",
                                  "Give a folder that can be written"));
}

int write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// Writes `text` to `path` durably: a temporary file, synced, renamed over it. A failed write
// removes the temporary file.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(tmp, errno);
  int err = write_all(fd, text);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    cannot_write(tmp, err);
  }
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

// The settings that differ between a pack in the folder (`was`) and this command (`now`), both
// JSON objects' texts: "shard_bytes 65536 in the pack, 16384 now; ...".
std::string settings_difference(const std::string& was, const std::string& now) {
  const nlohmann::json a = nlohmann::json::parse(was), b = nlohmann::json::parse(now);
  auto value = [](const nlohmann::json& j, const std::string& key) {
    return j.contains(key) ? j.at(key).dump() : std::string("none");
  };
  std::string out;
  nlohmann::json keys = a;
  keys.update(b);
  for (const auto& [key, ignored] : keys.items()) {
    if (value(a, key) == value(b, key)) continue;
    out += (out.empty() ? "" : "; ") + key + " " + value(a, key) + " in the pack, " +
           value(b, key) + " now";
  }
  return out;
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
  bool placed = false;  // renamed into place: no longer a part

  void put(const void* data, size_t n) {
    if (n == 0) return;
    if (std::fwrite(data, 1, n, tar) != n) cannot_write(tar_part, errno);
    tar_hash.update(data, n);
    bytes += n;
  }
  // A shard that stops part way (a failed write, an error of the input) leaves no part behind.
  ~OpenShard() {
    if (tar != nullptr) std::fclose(tar);
    if (!placed && !tar_part.empty()) ::unlink(tar_part.c_str());
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
  if (ec || !fs::is_directory(options_.dir)) cannot_use_folder(options_.dir, ec ? ec.value() : ENOTDIR);
  const std::string finished = path_in(options_.dir, kPackName);
  const std::string progress = path_in(options_.dir, kProgressName);
  if (fs::exists(finished)) {
    if (!options_.overwrite) adopt(parse_pack(read_whole(finished), finished), true);
  } else if (fs::exists(progress)) {
    adopt(parse_pack(read_whole(progress), progress, /*partial=*/true), false);
  }
  remove_stale();
}

void PackWriter::adopt(const PackDescription& done, bool finished) {
  const std::string state = finished ? "finished" : "stopped";
  if (done.settings != pack_.settings) {
    if (options_.overwrite) return;  // started again; remove_stale() clears the folder
    throw OptionError("output", mploader::detail::message(
        "mploader-pack", in_quotes(options_.dir) + " holds a " + state + " pack made with " +
                             "other input or options (" +
                             settings_difference(done.settings, pack_.settings) + ")",
        finished ? "Write to another folder, or give --overwrite to replace it"
                 : "Run the same command again to finish it, write to another folder, or "
                   "give --overwrite to start again"));
  }
  for (const PackedShard& s : done.shards) {
    if (options_.publish) break;  // published and removed here
    const std::string tar = path_in(options_.dir, s.tar);
    std::error_code ec;
    if (fs::file_size(tar, ec) != static_cast<uintmax_t>(s.tar_bytes) || ec) {
      throw OptionError("output", mploader::detail::message(
          "mploader-pack", "the " + state + " pack's shard " + in_quotes(tar) +
                               " is missing or not the size its " +
                               (finished ? "description" : "progress file") + " records",
          "Give --overwrite to start again"));
    }
  }
  pack_.shards = done.shards;
  pack_.fields = done.fields;
  if (!pack_.shards.empty()) {
    next_sample_ = pack_.shards.back().first_sample + pack_.shards.back().samples;
  }
  complete_ = finished;
}

// Whatever else a shard's name has here is stale: a shard not recorded, parts, old packs.
void PackWriter::remove_stale() const {
  std::error_code ec;
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
  s.placed = true;
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
  if (complete_) return;  // written before: nothing to do
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
