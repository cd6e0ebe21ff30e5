#include "worker/worker_spec.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <tuple>

namespace mploader::worker {
namespace {

// Recipes may hold any bytes (a dataset's config); hex keeps the line one word per field.
std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Hex of hex() followed by the '-' that keeps an empty field one word; nullopt for any other
// text (a variable set by hand, a corrupt message), never an exception.
std::optional<std::string> unhex_field(const std::string& text) {
  if (text.empty() || text.back() != '-' || text.size() % 2 != 1) return std::nullopt;
  std::string out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    const int high = hex_digit(text[i]), low = hex_digit(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
  }
  return out;
}

// Every field, in one place for comparing.
auto fields(const WorkerSettings& s) {
  return std::tie(s.seed, s.first_epoch, s.rank, s.world_size, s.allow_overflow, s.dataset_factory,
                  s.dataset_config, s.collator_recipe);
}

auto own_fields(const WorkerSpec& s) {
  return std::tie(s.worker_id, s.worker_slots, s.parent_pid, s.region_fd, s.region_bytes,
                  s.task_event_fd, s.done_event_fd, s.socket_fd);
}

}  // namespace

bool operator==(const WorkerSettings& a, const WorkerSettings& b) {
  return fields(a) == fields(b);
}

bool operator==(const WorkerSpec& a, const WorkerSpec& b) {
  return a.settings == b.settings && own_fields(a) == own_fields(b);
}

// The worker's own fields, then the shared settings; a '-' ends each recipe, so that an empty
// one is still a word.
std::string encode_spec(const WorkerSpec& s) {
  const WorkerSettings& w = s.settings;
  std::ostringstream out;
  out << "v3 " << s.worker_id << ' ' << s.parent_pid << ' ' << s.region_fd << ' '
      << s.region_bytes << ' ' << s.task_event_fd << ' ' << s.done_event_fd << ' '
      << s.socket_fd << ' ' << s.worker_slots << ' ' << w.seed << ' ' << w.first_epoch << ' '
      << w.rank << ' ' << w.world_size << ' ' << w.allow_overflow << ' ' << hex(w.dataset_factory) << "- "
      << hex(w.dataset_config) << "- " << hex(w.collator_recipe) << '-';
  return out.str();
}

std::optional<WorkerSpec> decode_spec(const std::string& text) {
  std::istringstream in(text);
  WorkerSpec s;
  WorkerSettings& w = s.settings;
  std::string version, factory, config, collator;
  in >> version >> s.worker_id >> s.parent_pid >> s.region_fd >> s.region_bytes >>
      s.task_event_fd >> s.done_event_fd >> s.socket_fd >> s.worker_slots >> w.seed >>
      w.first_epoch >> w.rank >> w.world_size >> w.allow_overflow >> factory >> config >> collator;
  if (!in || version != "v3") return std::nullopt;
  std::optional<std::string> f = unhex_field(factory), d = unhex_field(config),
                             c = unhex_field(collator);
  if (!f || !d || !c) return std::nullopt;
  w.dataset_factory = std::move(*f);
  w.dataset_config = std::move(*d);
  w.collator_recipe = std::move(*c);
  return s;
}

ipc::Result<ipc::UniqueFd> spec_to_memfd(const WorkerSpec& spec) {
  const std::string text = encode_spec(spec);
  ipc::UniqueFd fd(memfd_create("mploader-worker-spec", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return ipc::SysError{"memfd_create", errno, "the worker's spec"};
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = pwrite(fd.get(), text.data() + done, text.size() - done,
                             static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ipc::SysError{"write", errno, "the worker's spec into its memfd"};
    done += static_cast<size_t>(n);
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
  std::string text(static_cast<size_t>(st.st_size), '\0');
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<size_t>(n);
  }
  return decode_spec(text);
}

}  // namespace mploader::worker
