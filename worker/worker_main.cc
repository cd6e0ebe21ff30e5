#include "worker/worker_main.h"

#include "core/recipes.h"
#include "ipc/shm_region.h"
#include "ipc/unique_fd.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace mploader::worker {

// Runs in the new worker, before any task. Exits the process.
namespace {

// What the main process is told of a recipe that failed, in `room` bytes with the
// terminator. A long message keeps its end: a Python traceback ends with the exception itself.
std::string init_error_text(const std::string& what, size_t room) {
  static const std::string kPrefix = "rebuilding the dataset in a spawned worker: ";
  static const std::string kCut = "... ";
  if (kPrefix.size() + what.size() < room) return kPrefix + what;
  size_t from = what.size() - (room - 1 - kPrefix.size() - kCut.size());
  while (from < what.size() && (static_cast<unsigned char>(what[from]) & 0xC0) == 0x80) ++from;
  return kPrefix + kCut + what.substr(from);  // from a character's first byte
}

// The descriptors handed beside the recipe, once the dataset is built (its factory made copies
// of what it keeps): a worker holds only the descriptors it uses.
void close_recipe_descriptors() {
  for (int fd : detail::recipe_descriptors()) close(fd);
  detail::set_recipe_descriptors({});
}

}  // namespace

void become_worker(WorkerSpec& spec) {
  unsetenv(kSpawnEnv);  // a loader inside this worker is an ordinary loader
  // They stayed open across this one exec only: a program that dataset code runs must not
  // hold the ring (and outlive us with it).
  for (int fd : {spec.region_fd, spec.task_event_fd, spec.done_event_fd, spec.socket_fd}) {
    (void)ipc::set_cloexec(fd, true);  // best effort: the worker runs either way
  }
  // The region's descriptor is the region's; the others stay open for the worker's lifetime.
  auto region = ipc::ShmRegion::adopt(ipc::UniqueFd(spec.region_fd), spec.region_bytes);
  if (!region.ok()) {
    std::fprintf(stderr, "mploader: spawned worker %d: %s\n", spec.worker_id,
                 region.error().describe().c_str());
    _exit(kSpawnFailedExit);
  }
  ipc::RegionView view(region.value().base());
  // Mapped, not read: the pages stay the main process's, shared by every worker.
  ipc::Status config = map_config(spec);
  if (!config.ok()) {
    std::fprintf(stderr, "mploader: spawned worker %d: %s\n", spec.worker_id,
                 config.error().describe().c_str());
    _exit(kSpawnFailedExit);
  }
  std::shared_ptr<Dataset> dataset;
  std::shared_ptr<Collator> collator;
  try {
    const WorkerSettings& settings = spec.settings;
    const auto factory = detail::find_dataset_factory(settings.dataset_factory);
    if (!factory) {
      throw OptionError("dataset_factory",
                        detail::message("spawned worker",
                                        "no dataset factory '" + settings.dataset_factory +
                                            "' is registered in this process",
                                        "Register it with MPLOADER_REGISTER_DATASET in the "
                                        "program, or in a library the workers load"));
    }
    detail::set_recipe_descriptors(spec.dataset_fd_numbers);
    dataset = factory(dataset_config_of(settings));
    // Built: its recipe can be as large as the dataset (a pickled one), and is not read again;
    // unmapped, the worker's memory holds only what the dataset made of it. The descriptors
    // beside it were the factory's to copy.
    spec.settings.dataset_config.reset();
    close_recipe_descriptors();
    collator = detail::collator_from_recipe(settings.collator_recipe);
  } catch (const std::exception& e) {
    const std::string text = init_error_text(e.what(), sizeof view.header().init_error);
    ipc::copy_text(view.header().init_error, sizeof view.header().init_error, text.c_str());
    _exit(kInitFailedExit);
  }
  if (getppid() != spec.parent_pid) _exit(0);  // its parent is already gone
  _exit(run_worker(WorkerContext{spec, view, dataset.get(), collator.get(), {}}));
}

void run_if_spawned() {
  const char* text = std::getenv(kSpawnEnv);
  if (text == nullptr) return;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  std::optional<WorkerSpec> spec;
  if (end != text && *end == '\0' && fd >= 0 && fd <= INT32_MAX) {
    spec = spec_from_fd(static_cast<int>(fd));
    ::close(static_cast<int>(fd));  // read once: the worker keeps none of its spec's bytes open
  }
  if (!spec) {
    std::fprintf(stderr, "mploader: %s=%s names no descriptor holding a worker's spec; unset "
                 "it\n", kSpawnEnv, text);
    _exit(kSpawnFailedExit);
  }
  become_worker(*spec);
}

}  // namespace mploader::worker
