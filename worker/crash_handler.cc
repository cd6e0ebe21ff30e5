#include "worker/crash_handler.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace mploader::worker {
namespace {

ipc::RegionHeader* g_header = nullptr;  // set once before the handlers are installed

// Signal context: async-signal-safe stores and backtrace() (primed at install).
uint64_t interrupted_pc(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  if (uc == nullptr) return 0;
#if defined(__x86_64__)
  return static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uint64_t>(uc->uc_mcontext.pc);
#else
  return 0;
#endif
}

void fill_record(ipc::CrashRecord& r, int sig, const siginfo_t* info, const void* context) {
  r.pc = interrupted_pc(context);
  r.signal = sig;
  r.si_code = info != nullptr ? info->si_code : 0;
  r.fault_address = info != nullptr ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
  r.tid = static_cast<int32_t>(syscall(SYS_gettid));
  r.sample_index = g_header->current_index.load(std::memory_order_relaxed);
  r.sequence = g_header->current_sequence.load(std::memory_order_relaxed);
  r.phase = g_header->phase.load(std::memory_order_relaxed);
  void* frames[ipc::kMaxFrames];
  const int n = backtrace(frames, static_cast<int>(ipc::kMaxFrames));
  r.num_frames = static_cast<uint32_t>(std::max(n, 0));
  for (int i = 0; i < n; ++i) r.frames[i] = reinterpret_cast<uint64_t>(frames[i]);
  g_header->maps_bytes = ipc::copy_own_maps(g_header->maps_text, sizeof g_header->maps_text);
  r.mapping[0] = '\0';
  r.mapping_fs_free = -1;
  r.mapping_fs_type = 0;
  r.mapping_file_size = -1;
  if (sig == SIGBUS || sig == SIGSEGV) {
    ipc::find_mapping_line(r.fault_address, r.mapping, sizeof r.mapping);
    // Now, before the dying process releases its pages and the number means nothing.
    if (r.mapping[0] != '\0') {
      ipc::mapping_filesystem(r.mapping, &r.mapping_fs_free, &r.mapping_fs_type);
      r.mapping_file_size = ipc::mapped_file_size(r.mapping);
    }
  }
}

// Signal context. The first fatal signal wins; a second one (a fault inside the handler)
// finds the default action already restored and kills the process.
void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  ipc::CrashRecord& r = g_header->crash;
  uint32_t expected = ipc::CrashRecord::kEmpty;
  if (r.state.compare_exchange_strong(expected, ipc::CrashRecord::kWriting)) {
    fill_record(r, sig, info, context);
    r.state.store(ipc::CrashRecord::kComplete, std::memory_order_release);
  }
  signal(sig, SIG_DFL);
  // Blocked while we run: delivered with the default action as soon as we return, so the
  // worker dies of the true signal before a faulting instruction could run again.
  raise(sig);
}

// Signal context: a stack snapshot for a worker that looks hung. The worker goes on.
void on_stack_dump(int sig, siginfo_t* info, void* context) {
  ipc::CrashRecord& r = g_header->stack_dump;
  r.state.store(ipc::CrashRecord::kWriting, std::memory_order_relaxed);
  fill_record(r, sig, info, context);
  r.state.store(ipc::CrashRecord::kComplete, std::memory_order_release);
}

ipc::Status install(int sig, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction sa {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, nullptr) != 0) return ipc::last_error("sigaction");
  return ipc::Ok{};
}

}  // namespace

ipc::Status install_crash_handlers(ipc::RegionHeader& header) {
  g_header = &header;
  // Touch both records now so the handler never takes a page fault on them.
  header.crash.state.store(ipc::CrashRecord::kEmpty);
  header.stack_dump.state.store(ipc::CrashRecord::kEmpty);
  // backtrace() loads libgcc lazily on first use; do that here, not inside a handler.
  void* prime[2];
  backtrace(prime, 2);
  const size_t stack_bytes = std::max<size_t>(64 * 1024, SIGSTKSZ);
  static void* alt_stack = std::malloc(stack_bytes);  // lives as long as the process
  if (alt_stack == nullptr) return ipc::SysError{"malloc", ENOMEM, "signal stack"};
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = stack_bytes;
  if (sigaltstack(&ss, nullptr) != 0) return ipc::last_error("sigaltstack");
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    ipc::Status s = install(sig, on_fatal_signal);
    if (!s.ok()) return s;
  }
  return install(kStackDumpSignal, on_stack_dump);
}

}  // namespace mploader::worker
