#include "process/launcher.h"

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace mploader::detail {
namespace {

std::atomic<int> g_own_threads{0};

class Launcher {
 public:
  Launcher() {
    g_own_threads.fetch_add(1);
    std::thread([this] { serve(); }).detach();  // lives until the process exits
  }

  ipc::Result<WorkerProcess> fork(const std::function<int()>& body) {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return request_ == nullptr; });  // one fork at a time
    std::optional<ipc::Result<WorkerProcess>> result;
    request_ = &body;
    result_ = &result;
    wake_.notify_all();
    done_.wait(lock, [&] { return result.has_value(); });
    request_ = nullptr;
    result_ = nullptr;
    idle_.notify_one();
    return std::move(*result);
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return request_ != nullptr && !result_->has_value(); });
      // Forking with our own mutex held is safe: the child never touches it.
      std::unique_lock<std::shared_mutex> quiet(fork_gate());
      result_->emplace(fork_worker(*request_));
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_, idle_;
  const std::function<int()>* request_ = nullptr;
  std::optional<ipc::Result<WorkerProcess>>* result_ = nullptr;
};

}  // namespace

ipc::Result<WorkerProcess> fork_from_launcher(const std::function<int()>& body) {
  // One launcher per process. A forked child inherits the pointer but not the thread, so a
  // process that is not the launcher's owner starts its own (the old one is unusable there).
  static std::mutex mutex;
  static Launcher* launcher = nullptr;  // never destroyed: its thread outlives main
  static pid_t owner = 0;
  Launcher* mine;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (launcher == nullptr || owner != getpid()) {
      if (launcher != nullptr) g_own_threads.store(0);  // the parent's threads are not here
      launcher = new Launcher();
      owner = getpid();
    }
    mine = launcher;
  }
  return mine->fork(body);
}

namespace {

// jemalloc's background thread (libarrow starts one when it loads) only purges its own
// allocator's memory, and jemalloc takes and releases its locks around fork with handlers of
// its own: forking beside it is safe.
bool is_jemalloc_purger(const char* tid) {
  const std::string path = std::string("/proc/self/task/") + tid + "/comm";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool read = std::fgets(name, sizeof name, f) != nullptr;
  std::fclose(f);
  return read && std::strncmp(name, "jemalloc_bg_thd", 15) == 0;
}

}  // namespace

int foreign_thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int threads = 0;
  while (dirent* e = readdir(d)) threads += e->d_name[0] != '.' && !is_jemalloc_purger(e->d_name);
  closedir(d);
  // The calling thread is the one about to fork; it is not a risk.
  return threads - 1 - g_own_threads.load();
}

void note_own_thread(int delta) { g_own_threads.fetch_add(delta); }

std::shared_mutex& fork_gate() {
  static std::shared_mutex* gate = new std::shared_mutex();  // outlives every thread
  return *gate;
}

}  // namespace mploader::detail
