#include "worker/worker_spec.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <tuple>
#include <utility>

namespace mploader::worker {
namespace {

// A spec is a header line of its numbers, ending with the two recipes' lengths, then those
// recipes' raw bytes. The dataset's recipe, which can be as large as the dataset (a pickled
// Python one), stays in its own shared memory: the header names its descriptor and size.
constexpr const char* kVersion = "v6";

// The dataset recipe's descriptor and size: the settings' own where they hold it (the main
// process), else what a parsed spec carries.
std::pair<int, uint64_t> config_of(const WorkerSpec& s) {
  if (const auto& config = s.settings.dataset_config) return {config->fd(), config->view().size()};
  return {s.config_fd, s.config_bytes};
}

}  // namespace

std::vector<int> dataset_fds_of(const WorkerSpec& s) {
  if (!s.settings.dataset_fds) return s.dataset_fd_numbers;
  std::vector<int> numbers;
  for (const ipc::UniqueFd& fd : *s.settings.dataset_fds) numbers.push_back(fd.get());
  return numbers;
}

namespace {

std::string header_of(const WorkerSpec& s) {
  const WorkerSettings& w = s.settings;
  const auto [config_fd, config_bytes] = config_of(s);
  std::ostringstream out;
  out << kVersion << ' ' << s.worker_id << ' ' << s.parent_pid << ' ' << s.region_fd << ' '
      << s.region_bytes << ' ' << s.task_event_fd << ' ' << s.done_event_fd << ' '
      << s.socket_fd << ' ' << s.worker_slots << ' ' << w.seed << ' ' << w.first_epoch << ' '
      << w.rank << ' ' << w.world_size << ' ' << w.allow_overflow << ' ' << config_fd << ' '
      << config_bytes << ' ' << w.dataset_factory.size() << ' ' << w.collator_recipe.size();
  const std::vector<int> fds = dataset_fds_of(s);
  out << ' ' << fds.size();
  for (int fd : fds) out << ' ' << fd;
  out << '\n';
  return out.str();
}

// The header's fields into `s`, and the recipes' lengths; false for anything else.
bool parse_header(const std::string& header, WorkerSpec& s, size_t (&lengths)[2]) {
  std::istringstream in(header);
  WorkerSettings& w = s.settings;
  std::string version;
  in >> version >> s.worker_id >> s.parent_pid >> s.region_fd >> s.region_bytes >>
      s.task_event_fd >> s.done_event_fd >> s.socket_fd >> s.worker_slots >> w.seed >>
      w.first_epoch >> w.rank >> w.world_size >> w.allow_overflow >> s.config_fd >>
      s.config_bytes >> lengths[0] >> lengths[1];
  size_t count = 0;
  in >> count;
  if (!in || count > kMaxDatasetFds) return false;
  s.dataset_fd_numbers.resize(count);
  for (int& fd : s.dataset_fd_numbers) {
    if (!(in >> fd) || fd < 0) return false;
  }
  return static_cast<bool>(in) && version == kVersion && (s.config_fd >= 0) == (s.config_bytes > 0);
}

// Where recipe `k` (factory, collator) is read into.
std::string* recipe_field(WorkerSpec& s, int k) {
  return k == 0 ? &s.settings.dataset_factory : &s.settings.collator_recipe;
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

// Every field, in one place for comparing.
auto fields(const WorkerSettings& s) {
  return std::tie(s.seed, s.first_epoch, s.rank, s.world_size, s.allow_overflow, s.dataset_factory,
                  s.collator_recipe);
}

auto own_fields(const WorkerSpec& s) {
  return std::tie(s.worker_id, s.worker_slots, s.parent_pid, s.region_fd, s.region_bytes,
                  s.task_event_fd, s.done_event_fd, s.socket_fd);
}

}  // namespace

std::string_view dataset_config_of(const WorkerSettings& s) {
  return s.dataset_config ? s.dataset_config->view() : std::string_view();
}

bool operator==(const WorkerSettings& a, const WorkerSettings& b) {
  return fields(a) == fields(b) && dataset_config_of(a) == dataset_config_of(b);
}

bool operator==(const WorkerSpec& a, const WorkerSpec& b) {
  return a.settings == b.settings && own_fields(a) == own_fields(b);
}

std::string encode_spec(const WorkerSpec& s) {
  return header_of(s) + s.settings.dataset_factory + s.settings.collator_recipe;
}

std::optional<WorkerSpec> decode_spec(const std::string& text) {
  const size_t end = text.find('\n');
  WorkerSpec s;
  size_t lengths[2] = {};
  if (end == std::string::npos || !parse_header(text.substr(0, end), s, lengths)) return std::nullopt;
  size_t at = end + 1;
  if (text.size() - at != lengths[0] + lengths[1]) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    recipe_field(s, k)->assign(text, at, lengths[k]);
    at += lengths[k];
  }
  return s;
}

ipc::Result<ipc::UniqueFd> spec_to_memfd(const WorkerSpec& spec) {
  // The spec's own bytes are small (names and numbers): sealed like the recipe's memory, so
  // that the worker reads exactly what was written.
  auto sealed = ipc::SealedBytes::create(encode_spec(spec), "mploader-worker-spec");
  if (!sealed.ok()) return sealed.error();
  const int fd = fcntl(sealed.value()->fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return ipc::last_error("fcntl(F_DUPFD_CLOEXEC)", "the worker's spec");
  return ipc::UniqueFd(fd);
}

std::optional<WorkerSpec> spec_from_fd(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return std::nullopt;
  const auto size = static_cast<size_t>(st.st_size);
  std::string text;
  if (!read_at(fd, 0, size, text)) return std::nullopt;
  return decode_spec(text);
}

ipc::Status map_config(WorkerSpec& spec) {
  if (spec.config_fd < 0) return ipc::Ok{};
  auto mapped = ipc::SealedBytes::map(ipc::UniqueFd(std::exchange(spec.config_fd, -1)),
                                      spec.config_bytes);
  if (!mapped.ok()) return mapped.error();
  spec.settings.dataset_config = mapped.take();
  return ipc::Ok{};
}

}  // namespace mploader::worker
