#include "worker/worker_spec.h"

#include <sstream>

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

}  // namespace

std::string encode_spec(const WorkerSpec& s) {
  std::ostringstream out;
  out << "v1 " << s.worker_id << ' ' << s.num_workers << ' ' << s.parent_pid << ' '
      << s.region_fd << ' ' << s.region_bytes << ' ' << s.task_event_fd << ' '
      << s.done_event_fd << ' ' << s.socket_fd << ' ' << s.seed << ' ' << s.first_epoch << ' '
      << s.rank << ' ' << s.allow_overflow << ' ' << hex(s.dataset_factory) << "- "
      << hex(s.dataset_config) << "- " << hex(s.collator_recipe) << '-';
  return out.str();
}

std::optional<WorkerSpec> decode_spec(const std::string& text) {
  std::istringstream in(text);
  WorkerSpec s;
  std::string version, factory, config, collator;
  in >> version >> s.worker_id >> s.num_workers >> s.parent_pid >> s.region_fd >>
      s.region_bytes >> s.task_event_fd >> s.done_event_fd >> s.socket_fd >> s.seed >>
      s.first_epoch >> s.rank >> s.allow_overflow >> factory >> config >> collator;
  if (!in || version != "v1") return std::nullopt;
  auto strip = [](std::string& t) { t.pop_back(); };  // the '-' that keeps empty fields
  strip(factory), strip(config), strip(collator);
  s.dataset_factory = unhex(factory);
  s.dataset_config = unhex(config);
  s.collator_recipe = unhex(collator);
  return s;
}

}  // namespace mploader::worker
