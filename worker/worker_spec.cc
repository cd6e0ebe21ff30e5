#include "worker/worker_spec.h"

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

std::string unhex(const std::string& text) {
  std::string out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  }
  return out;
}

// Every field, in one place for comparing.
auto fields(const WorkerSettings& s) {
  return std::tie(s.num_workers, s.seed, s.first_epoch, s.rank, s.allow_overflow,
                  s.dataset_factory, s.dataset_config, s.collator_recipe);
}

auto own_fields(const WorkerSpec& s) {
  return std::tie(s.worker_id, s.parent_pid, s.region_fd, s.region_bytes, s.task_event_fd,
                  s.done_event_fd, s.socket_fd);
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
  out << "v2 " << s.worker_id << ' ' << s.parent_pid << ' ' << s.region_fd << ' '
      << s.region_bytes << ' ' << s.task_event_fd << ' ' << s.done_event_fd << ' '
      << s.socket_fd << ' ' << w.num_workers << ' ' << w.seed << ' ' << w.first_epoch << ' '
      << w.rank << ' ' << w.allow_overflow << ' ' << hex(w.dataset_factory) << "- "
      << hex(w.dataset_config) << "- " << hex(w.collator_recipe) << '-';
  return out.str();
}

std::optional<WorkerSpec> decode_spec(const std::string& text) {
  std::istringstream in(text);
  WorkerSpec s;
  WorkerSettings& w = s.settings;
  std::string version, factory, config, collator;
  in >> version >> s.worker_id >> s.parent_pid >> s.region_fd >> s.region_bytes >>
      s.task_event_fd >> s.done_event_fd >> s.socket_fd >> w.num_workers >> w.seed >>
      w.first_epoch >> w.rank >> w.allow_overflow >> factory >> config >> collator;
  if (!in || version != "v2") return std::nullopt;
  auto strip = [](std::string& t) { t.pop_back(); };  // the '-' that keeps empty fields
  strip(factory), strip(config), strip(collator);
  w.dataset_factory = unhex(factory);
  w.dataset_config = unhex(config);
  w.collator_recipe = unhex(collator);
  return s;
}

}  // namespace mploader::worker
