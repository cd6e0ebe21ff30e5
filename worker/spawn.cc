#include "worker/spawn.h"

#include "ipc/region_layout.h"
#include "ipc/shm_region.h"
#include "worker/forkserver.h"
#include "worker/worker_loop.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

namespace mploader {
namespace {

std::vector<std::string> g_argv;  // the program's arguments, for spawned workers
std::atomic<bool> g_initialized{false};

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

bool set_cloexec(int fd, bool on) {
  const int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC) == 0;
}

}  // namespace

// Runs in the new worker, before any task. Exits the process.
void worker::become_worker(const worker::SpawnSpec& spec) {
  unsetenv(worker::kSpawnEnv);  // a loader inside this worker is an ordinary loader
  // They stayed open across this one exec only: a program that dataset code runs must not
  // hold the ring (and outlive us with it).
  for (int fd : {spec.region_fd, spec.task_event_fd, spec.done_event_fd, spec.socket_fd}) {
    set_cloexec(fd, true);
  }
  auto region = ipc::ShmRegion::adopt(spec.region_fd, spec.region_bytes);
  if (!region.ok()) {
    std::fprintf(stderr, "mploader: spawned worker %d: %s\n", spec.worker_id,
                 region.error().describe().c_str());
    _exit(worker::kSpawnFailedExit);
  }
  ipc::RegionView view(region.value().base());
  std::shared_ptr<Dataset> dataset;
  std::shared_ptr<Collator> collator;
  try {
    DatasetFactory factory = worker::find_dataset_factory(spec.dataset_factory);
    if (!factory) throw std::invalid_argument("no dataset factory '" + spec.dataset_factory + "'");
    dataset = factory(spec.dataset_config);
    collator = worker::collator_from_recipe(spec.collator_recipe);
  } catch (const std::exception& e) {
    const std::string text = std::string("rebuilding the dataset in a spawned worker: ") + e.what();
    ipc::copy_text(view.header().init_error, sizeof view.header().init_error, text.c_str());
    _exit(worker::kInitFailedExit);
  }
  if (getppid() != spec.parent_pid) _exit(0);  // its parent is already gone
  _exit(worker::run_worker(worker::context_from_spec(spec, view, dataset.get(), collator.get())));
}

worker::WorkerContext worker::context_from_spec(const SpawnSpec& spec, ipc::RegionView region,
                                                Dataset* dataset, Collator* collator) {
  WorkerContext c;
  c.worker_id = spec.worker_id;
  c.parent_pid = spec.parent_pid;
  c.region = region;
  c.task_event_fd = spec.task_event_fd;
  c.done_event_fd = spec.done_event_fd;
  c.socket_fd = spec.socket_fd;
  c.allow_overflow = spec.allow_overflow;
  c.dataset = dataset;
  c.collator = collator;
  c.num_workers = spec.num_workers;
  c.base_seed = spec.seed;
  c.first_epoch = spec.first_epoch;
  c.rank = spec.rank;
  return c;
}

void init(int argc, char** argv) {
  g_argv.assign(argv, argv + argc);
  g_initialized.store(true);
  worker::run_if_spawned();
  worker::serve_if_forkserver();
}

bool initialized() { return g_initialized.load(); }

namespace worker {

std::string encode_spec(const SpawnSpec& s) {
  std::ostringstream out;
  out << "v1 " << s.worker_id << ' ' << s.num_workers << ' ' << s.parent_pid << ' '
      << s.region_fd << ' ' << s.region_bytes << ' ' << s.task_event_fd << ' '
      << s.done_event_fd << ' ' << s.socket_fd << ' ' << s.seed << ' ' << s.first_epoch << ' '
      << s.rank << ' ' << s.allow_overflow << ' ' << hex(s.dataset_factory) << "- "
      << hex(s.dataset_config) << "- " << hex(s.collator_recipe) << '-';
  return out.str();
}

std::optional<SpawnSpec> decode_spec(const std::string& text) {
  std::istringstream in(text);
  SpawnSpec s;
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

void exec_self(const char* name, const std::string& value, const std::vector<int>& fds) {
  // In the new process only (this is the child of a fork): the parent's copies keep
  // FD_CLOEXEC, so a program the training process runs inherits none of them.
  for (int fd : fds) {
    if (!set_cloexec(fd, false)) return;
  }
  if (setenv(name, value.c_str(), 1) != 0) return;
  std::vector<char*> args;
  for (std::string& a : g_argv) args.push_back(a.data());
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
}

void exec_worker(const SpawnSpec& spec) {
  exec_self(kSpawnEnv, encode_spec(spec),
            {spec.region_fd, spec.task_event_fd, spec.done_event_fd, spec.socket_fd});
}

void run_if_spawned() {
  const char* text = std::getenv(kSpawnEnv);
  if (text == nullptr) return;
  std::optional<SpawnSpec> spec = decode_spec(text);
  if (!spec) {
    std::fprintf(stderr, "mploader: %s is set but malformed; unset it\n", kSpawnEnv);
    _exit(kSpawnFailedExit);
  }
  become_worker(*spec);
}

}  // namespace worker
}  // namespace mploader
