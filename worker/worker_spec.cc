#include "worker/worker_spec.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <tuple>

namespace mploader::worker {
namespace {

// A spec is a header line of its numbers, ending with the three recipes' lengths, then the
// recipes' raw bytes. A dataset's recipe can be as large as the dataset (a pickled Python one):
// raw, it is written and read once, with no text encoding that would double it.
constexpr const char* kVersion = "v4";
constexpr size_t kMaxHeaderBytes = 1024;

std::string header_of(const WorkerSpec& s) {
  const WorkerSettings& w = s.settings;
  std::ostringstream out;
  out << kVersion << ' ' << s.worker_id << ' ' << s.parent_pid << ' ' << s.region_fd << ' '
      << s.region_bytes << ' ' << s.task_event_fd << ' ' << s.done_event_fd << ' '
      << s.socket_fd << ' ' << s.worker_slots << ' ' << w.seed << ' ' << w.first_epoch << ' '
      << w.rank << ' ' << w.world_size << ' ' << w.allow_overflow << ' '
      << w.dataset_factory.size() << ' ' << dataset_config_of(w).size() << ' '
      << w.collator_recipe.size() << '\n';
  return out.str();
}

// The header's fields into `s`, and the recipes' lengths; false for anything else.
bool parse_header(const std::string& header, WorkerSpec& s, size_t (&lengths)[3]) {
  std::istringstream in(header);
  WorkerSettings& w = s.settings;
  std::string version;
  in >> version >> s.worker_id >> s.parent_pid >> s.region_fd >> s.region_bytes >>
      s.task_event_fd >> s.done_event_fd >> s.socket_fd >> s.worker_slots >> w.seed >>
      w.first_epoch >> w.rank >> w.world_size >> w.allow_overflow >> lengths[0] >> lengths[1] >>
      lengths[2];
  return static_cast<bool>(in) && version == kVersion;
}

// Where recipe `k` (factory, config, collator) is read into; the config into `config`, which the
// caller then shares (WorkerSettings::dataset_config).
std::string* recipe_field(WorkerSpec& s, int k, std::string& config) {
  WorkerSettings& w = s.settings;
  return k == 0 ? &w.dataset_factory : k == 1 ? &config : &w.collator_recipe;
}

void share_config(WorkerSpec& s, std::string&& config) {
  if (!config.empty()) s.settings.dataset_config = std::make_shared<const std::string>(std::move(config));
}

// Reads `size` bytes at `offset` of `fd` into `out`; false on an error or a short file.
bool read_at(int fd, off_t offset, size_t size, std::string& out) {
  out.resize(size);
  for (size_t done = 0; done < size;) {
    const ssize_t n = pread(fd, out.data() + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool write_at(int fd, off_t offset, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = pwrite(fd, bytes.data() + done, bytes.size() - done,
                             offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Every field, in one place for comparing.
auto fields(const WorkerSettings& s) {
  return std::tie(s.seed, s.first_epoch, s.rank, s.world_size, s.allow_overflow, s.dataset_factory,
                  dataset_config_of(s), s.collator_recipe);
}

auto own_fields(const WorkerSpec& s) {
  return std::tie(s.worker_id, s.worker_slots, s.parent_pid, s.region_fd, s.region_bytes,
                  s.task_event_fd, s.done_event_fd, s.socket_fd);
}

}  // namespace

const std::string& dataset_config_of(const WorkerSettings& s) {
  static const std::string none;
  return s.dataset_config ? *s.dataset_config : none;
}

bool operator==(const WorkerSettings& a, const WorkerSettings& b) {
  return fields(a) == fields(b);
}

bool operator==(const WorkerSpec& a, const WorkerSpec& b) {
  return a.settings == b.settings && own_fields(a) == own_fields(b);
}

std::string encode_spec(const WorkerSpec& s) {
  const WorkerSettings& w = s.settings;
  return header_of(s) + w.dataset_factory + dataset_config_of(w) + w.collator_recipe;
}

std::optional<WorkerSpec> decode_spec(const std::string& text) {
  const size_t end = text.find('\n');
  WorkerSpec s;
  size_t lengths[3] = {};
  if (end == std::string::npos || !parse_header(text.substr(0, end), s, lengths)) return std::nullopt;
  size_t at = end + 1;
  if (text.size() - at != lengths[0] + lengths[1] + lengths[2]) return std::nullopt;
  std::string config;
  for (int k = 0; k < 3; ++k) {
    recipe_field(s, k, config)->assign(text, at, lengths[k]);
    at += lengths[k];
  }
  share_config(s, std::move(config));
  return s;
}

ipc::Result<ipc::UniqueFd> spec_to_memfd(const WorkerSpec& spec) {
  ipc::UniqueFd fd(memfd_create("mploader-worker-spec", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return ipc::SysError{"memfd_create", errno, "the worker's spec"};
  const std::string header = header_of(spec);
  const WorkerSettings& w = spec.settings;
  off_t at = 0;
  for (const std::string* part : {&header, &w.dataset_factory, &dataset_config_of(w),
                                  &w.collator_recipe}) {
    if (!write_at(fd.get(), at, *part)) {
      return ipc::SysError{"write", errno, "the worker's spec into its memfd"};
    }
    at += static_cast<off_t>(part->size());
  }
  // Read-only from here: the worker reads exactly what was written.
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
      0) {
    return ipc::SysError{"fcntl(F_ADD_SEALS)", errno, "the worker's spec"};
  }
  return fd;
}

std::optional<WorkerSpec> spec_from_fd(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return std::nullopt;
  const auto size = static_cast<size_t>(st.st_size);
  std::string head;
  if (!read_at(fd, 0, std::min(size, kMaxHeaderBytes), head)) return std::nullopt;
  const size_t end = head.find('\n');
  WorkerSpec s;
  size_t lengths[3] = {};
  if (end == std::string::npos || !parse_header(head.substr(0, end), s, lengths)) return std::nullopt;
  auto at = static_cast<off_t>(end + 1);
  if (size - (end + 1) != lengths[0] + lengths[1] + lengths[2]) return std::nullopt;
  std::string config;
  for (int k = 0; k < 3; ++k) {  // each recipe read once, straight into its field
    if (!read_at(fd, at, lengths[k], *recipe_field(s, k, config))) return std::nullopt;
    at += static_cast<off_t>(lengths[k]);
  }
  share_config(s, std::move(config));
  return s;
}

}  // namespace mploader::worker
