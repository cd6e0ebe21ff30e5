#include "supervise/diagnosis.h"

#include "ipc/shm_region.h"
#include "process/worker_process.h"
#include "util/units.h"
#include "worker/worker_loop.h"

#include <signal.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include <cstdio>
#include <sstream>

namespace mploader::detail {
namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// "where": the phase and sample the worker was in.
std::string where(const DeathEvidence& e) {
  const int64_t index = e.crash ? e.crash->sample_index : e.loading_index;
  const uint32_t phase = e.crash ? e.crash->phase : e.phase;
  std::string s = std::string("in ") + ipc::phase_name(phase);
  if (index < 0) return s;
  switch (static_cast<ipc::WorkerPhase>(phase)) {
    case ipc::WorkerPhase::kDatasetGet: return "in Dataset::get(" + std::to_string(index) + ")";
    case ipc::WorkerPhase::kDatasetWrite:
      return "in Dataset::write(" + std::to_string(index) + ")";
    case ipc::WorkerPhase::kDatasetWriteBatch:
      return "in Dataset::write_batch, on the batch that begins with sample " +
             std::to_string(index);
    default: return s;
  }
  return s;
}

// The fields of a /proc/<pid>/maps line that matter here.
struct Mapping {
  std::string path;  // "" when anonymous
  bool shared = false;
  uint64_t start = 0;
  uint64_t bytes = 0;
  uint64_t file_offset = 0;  // of the file, where the mapping starts
  std::string tidy;  // the line with its runs of spaces folded, for messages
};

Mapping parse_mapping(const std::string& line) {
  std::istringstream in(line);
  std::string range, perms, offset, dev, inode, path;
  in >> range >> perms >> offset >> dev >> inode;
  std::getline(in, path);
  path.erase(0, path.find_first_not_of(' '));
  Mapping m;
  m.path = path;
  m.shared = perms.size() >= 4 && perms[3] == 's';
  const size_t dash = range.find('-');
  if (dash != std::string::npos) {
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.bytes = std::stoull(range.substr(dash + 1), nullptr, 16) - m.start;
    m.file_offset = std::stoull(offset, nullptr, 16);
  }
  std::istringstream words(line);
  for (std::string w; words >> w;) m.tidy += (m.tidy.empty() ? "" : " ") + w;
  return m;
}

// Free bytes of the tmpfs holding `path`; -1 when it is not on a tmpfs (or unknown).
int64_t tmpfs_free_bytes(const std::string& path) {
  const std::string dir = path.substr(0, path.find_last_of('/'));
  struct statfs st;
  if (dir.empty() || statfs(dir.c_str(), &st) != 0 || st.f_type != TMPFS_MAGIC) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_bsize);
}

std::string fault_at(const ipc::CrashSnapshot& c) {
  // For a signal sent by a process (kill, raise, abort) si_addr holds no address.
  return c.si_code <= 0 ? std::string() : " at " + hex(c.fault_address);
}

// A tmpfs that refused a page had less than a page free at the fault. The slack allows for
// pages other processes freed between the refusal and the handler's measurement.
constexpr int64_t kFullTmpfsSlackBytes = int64_t{2} << 20;

// Where a SIGBUS fell, and what the worker's handler found of the file and its filesystem.
struct BusFacts {
  Mapping mapping;
  bool adrerr = false;  // BUS_ADRERR in a mapping of a file (or memfd): no page backs it
  bool on_shm = false;  // a memfd or a file on a tmpfs
  bool measured = false;  // by the handler at the fault, not now
  int64_t free_bytes = -1;  // on its tmpfs; -1 when not a tmpfs or unknown
  int64_t file_size = -1;   // of the mapped file at the fault; -1 unknown
  uint64_t fault_offset = 0;  // of the faulting address, in the file
};

BusFacts bus_facts(const DeathEvidence& e) {
  BusFacts f;
  f.mapping = parse_mapping(e.crash ? e.crash->mapping : "");
  const Mapping& m = f.mapping;
  f.adrerr = e.crash && e.crash->si_code == BUS_ADRERR && m.path.rfind('/', 0) == 0;
  // The worker's handler measured the filesystem at the fault; measuring now would count the
  // pages the dead worker has since released.
  f.measured = e.crash && e.crash->mapping_fs_type != 0;
  const bool tmpfs = f.measured ? e.crash->mapping_fs_type == TMPFS_MAGIC
                                : tmpfs_free_bytes(m.path) >= 0;
  f.free_bytes = !tmpfs ? -1 : f.measured ? e.crash->mapping_fs_free : tmpfs_free_bytes(m.path);
  f.on_shm = m.path.rfind("/memfd:", 0) == 0 || tmpfs;
  if (e.crash && e.crash->fault_address >= m.start) {
    f.file_size = e.crash->mapping_file_size;
    f.fault_offset = m.file_offset + (e.crash->fault_address - m.start);
  }
  return f;
}

// The mapping's file ends before the address: it was cut short under the mapping (or mapped
// past its end). No page was missing for lack of room, whatever the tmpfs holds.
bool past_end_of_file(const BusFacts& f) {
  return f.adrerr && f.file_size >= 0 && f.fault_offset >= static_cast<uint64_t>(f.file_size);
}

bool tmpfs_full(const BusFacts& f) {
  if (!f.adrerr || !f.on_shm || !f.mapping.shared) return false;
  if (f.free_bytes < 0) return true;  // a memfd: its filesystem has no size to measure
  const uint64_t room = f.measured ? static_cast<uint64_t>(kFullTmpfsSlackBytes) : f.mapping.bytes;
  return static_cast<uint64_t>(f.free_bytes) < room;
}

void diagnose_truncated_file(const DeathEvidence& e, const BusFacts& f, Diagnosis& d) {
  const std::string& path = f.mapping.path;
  d.cause = DeathCause::kFileTruncated;
  d.what_happened = "bus error " + where(e) + ": it accessed offset " +
                    human_bytes(f.fault_offset) + " of the memory-mapped file '" + path +
                    "', which holds " + human_bytes(static_cast<uint64_t>(f.file_size)) +
                    " now: the file was truncated while mapped (or mapped past its end)";
  d.remedy = "Do not truncate or rewrite '" + path + "' in place while a loader maps it: write "
             "the new contents to another file and rename() it over the old one (workers that "
             "mapped the old one keep its pages), or stop the loader first. A dataset that maps "
             "a file must map no more than its size (fstat) says. Shared memory was not short: "
             "--shm-size would not help.";
}

void diagnose_bus(const DeathEvidence& e, Diagnosis& d) {
  const BusFacts f = bus_facts(e);
  d.evidence = "SIGBUS (" + si_code_name(SIGBUS, e.crash ? e.crash->si_code : 0) + ")" +
               (e.crash ? fault_at(*e.crash) : "") +
               (f.mapping.tidy.empty() ? "" : " in the mapping '" + f.mapping.tidy + "'") +
               (f.file_size >= 0 ? ", at offset " + std::to_string(f.fault_offset) +
                                       " of a file of " + std::to_string(f.file_size) + " bytes"
                                 : "") +
               (f.free_bytes >= 0 ? "; " + human_bytes(f.free_bytes) + " free on its tmpfs" +
                                        (f.measured ? " at the fault" : "")
                                  : "");
  if (past_end_of_file(f)) return diagnose_truncated_file(e, f, d);
  if (tmpfs_full(f)) {
    d.cause = DeathCause::kShmFull;
    d.what_happened = "bus error writing shared memory " + where(e) + ": its tmpfs had no page "
                      "left to give";
    d.remedy = "Give shared memory more room: in Docker run with --shm-size=8g (or more) or "
               "--ipc=host; lower prefetch_factor or batch_size; point the dataset's shared "
               "files (and shm_dir) at a larger tmpfs. mploader's own rings are reserved up "
               "front and fail at construction instead.";
    return;
  }
  d.cause = DeathCause::kBusError;
  d.what_happened = "bus error " + where(e);
  d.remedy = f.adrerr ? "The mapped file is shorter than its mapping: it was truncated while "
                        "mapped, or mapped past its end. Check the file's size before mapping "
                        "it and do not shrink files the workers map."
                      : "A memory-mapped file shrank under the worker, or memory was "
                        "misaligned: look at files the dataset maps. Reproduce with "
                        "num_workers = 0.";
}

void diagnose_kill(const DeathEvidence& e, Diagnosis& d) {
  const auto& b = e.oom_before;
  const auto& a = e.oom_after;
  const bool oom = b.oom_kills >= 0 && a.oom_kills > b.oom_kills;
  std::string memory;
  if (e.memory) {
    memory = "last sampled RSS " + human_bytes(e.memory->rss_bytes) + " (peak " +
             human_bytes(e.memory->hwm_bytes) + ", " + std::to_string(e.memory_age_ms) +
             " ms before death), of which the ring is at most " + human_bytes(e.ring_bytes);
  }
  const WorkerMemory& m = e.memory_history.summary;
  if (m.samples > 1) {
    memory += (memory.empty() ? "" : "; ") + std::string("private memory ") +
              human_bytes(static_cast<uint64_t>(m.private_start_bytes)) +
              " at the start of epoch " + std::to_string(m.epoch) + ", " +
              human_bytes(static_cast<uint64_t>(m.private_bytes)) + " when last sampled" +
              (m.growth_warned ? " (it kept growing: the loader warned)" : "");
  }
  if (oom) {
    d.cause = DeathCause::kOutOfMemory;
    d.what_happened = "killed by the kernel's OOM killer " + where(e);
    d.evidence = "SIGKILL; oom_kill in " + a.source + (a.path.empty() ? "" : " " + a.path) +
                 " rose from " + std::to_string(b.oom_kills) + " to " +
                 std::to_string(a.oom_kills) +
                 (a.limit_bytes >= 0 ? "; memory limit " + human_bytes(a.limit_bytes) : "") +
                 (memory.empty() ? "" : "; " + memory);
    d.remedy = "Use less memory per worker or raise the limit: fewer workers, a smaller "
               "batch_size or prefetch_factor, load data lazily per sample, share read-only "
               "arrays through memory-mapped files instead of copies in each worker.";
    return;
  }
  d.cause = DeathCause::kKilled;
  d.what_happened = "killed by SIGKILL from outside " + where(e);
  d.evidence = "SIGKILL with no OOM kill recorded in " + a.source +
               (a.path.empty() ? "" : " " + a.path) + " (" + std::to_string(a.oom_kills) +
               " before and after)" + (memory.empty() ? "" : "; " + memory);
  d.remedy = "Another process sent SIGKILL: a job scheduler, a watchdog, kill -9. If memory was "
             "short, the OOM killer of another cgroup may be involved: look at dmesg.";
}

void diagnose_fault(const DeathEvidence& e, Diagnosis& d, DeathCause cause, const char* what,
                    const char* remedy) {
  d.cause = cause;
  d.what_happened = std::string(what) + " " + where(e);
  d.evidence = std::string(strsignal(e.status.signal));
  if (e.crash) {
    d.evidence += " (" + si_code_name(e.status.signal, e.crash->si_code) + ")" +
                  fault_at(*e.crash) + ", thread " + std::to_string(e.crash->tid);
  }
  d.remedy = remedy;
}

void diagnose_signal(const DeathEvidence& e, Diagnosis& d) {
  switch (e.status.signal) {
    case SIGKILL: return diagnose_kill(e, d);
    case SIGBUS: return diagnose_bus(e, d);
    case SIGSEGV:
      return diagnose_fault(e, d, DeathCause::kSegfault, "segmentation fault",
                            "Dataset or collate code (or a library it calls) touched invalid "
                            "memory; the frames show where. Reproduce with num_workers = "
                            "0 under gdb or AddressSanitizer.");
    case SIGFPE:
      return diagnose_fault(e, d, DeathCause::kFloatingPoint, "arithmetic fault",
                            "An integer division by zero (or overflow) in dataset code; the "
                            "frames show where.");
    case SIGILL:
      return diagnose_fault(e, d, DeathCause::kIllegalInstruction, "illegal instruction",
                            "Code built for a newer CPU than this one, or a corrupted function "
                            "pointer; the frames show where.");
    case SIGABRT:
      return diagnose_fault(e, d, DeathCause::kAbort, "abort",
                            "abort() was called: a failed assert, or std::terminate (an "
                            "exception leaving a noexcept function or a destructor). The frames "
                            "show where.");
    case SIGTERM: case SIGINT: case SIGHUP: case SIGQUIT:
      d.cause = DeathCause::kTerminated;
      d.what_happened = std::string("terminated by ") + strsignal(e.status.signal) + " " + where(e);
      d.evidence = "signal " + std::to_string(e.status.signal) + " sent from outside";
      d.remedy = "A person, a scheduler or a job manager stopped the worker (Ctrl-C reaches the "
                 "process group; mploader's workers ignore SIGINT).";
      return;
    default:
      d.cause = DeathCause::kOtherSignal;
      d.what_happened = std::string("killed by ") + strsignal(e.status.signal) + " " + where(e);
      d.evidence = "signal " + std::to_string(e.status.signal);
      d.remedy = "Reproduce with num_workers = 0 to see the failure in this process.";
  }
}

// A worker that was stopped when the timeout ran out: nothing in it hung, someone paused it.
void diagnose_stopped(const DeathEvidence& e, Diagnosis& d) {
  const bool traced = e.process_state == 't';
  d.cause = DeathCause::kHang;
  d.what_happened = "no batch within the timeout (" + std::to_string(e.timeout_ms) +
                    " ms) because the worker was stopped " +
                    (traced ? "by a debugger or tracer (gdb, strace)"
                            : "by a signal (SIGSTOP, or SIGTSTP from Ctrl-Z / job control)") +
                    " " + where(e) + "; it was killed";
  d.evidence = "/proc/" + std::to_string(e.pid) + "/stat showed state " + e.process_state +
               (traced ? " (traced)" : " (stopped)") + " at the timeout; finished " +
               std::to_string(e.tasks_done) + " tasks; no stack asked of a stopped process";
  d.remedy = traced ? "Continue or detach the debugger before the timeout runs out, or raise "
                      "timeout (0 = none) while debugging; num_workers = 0 runs dataset code "
                      "in this process, where a debugger is easier."
                    : "Resume a stopped worker with SIGCONT (kill -CONT <pid>, or fg in the "
                      "shell that stopped it) before the timeout runs out; if workers are "
                      "stopped on purpose, raise timeout (0 = none).";
}

// A worker that failed before its first sample: worker_init threw, or (spawn, forkserver) the
// dataset could not be rebuilt from its recipe in the new process.
void diagnose_init_error(const DeathEvidence& e, Diagnosis& d) {
  static const std::string kRebuilding = "rebuilding the dataset in a spawned worker: ";
  const bool rebuilding = e.init_error.rfind(kRebuilding, 0) == 0;
  d.cause = DeathCause::kExit;
  d.what_happened = rebuilding ? "could not rebuild the dataset in a new process: " +
                                     e.init_error.substr(kRebuilding.size())
                               : "worker_init threw " + e.init_error;
  d.evidence = "exit status " + std::to_string(e.status.exit_code) + " before the first sample";
  d.remedy = rebuilding ? "The dataset's recipe failed in a fresh process (start_method spawn "
                          "or forkserver), before any sample was read: fix what the error "
                          "names, or use start_method fork."
                        : "Fix the worker_init function; it runs in each worker before any "
                          "sample.";
}

}  // namespace

Diagnosis diagnose(const DeathEvidence& e) {
  Diagnosis d;
  if (e.hang && (e.process_state == 'T' || e.process_state == 't')) {
    diagnose_stopped(e, d);
  } else if (e.hang) {
    d.cause = DeathCause::kHang;
    d.what_happened = "no progress within the timeout (" + std::to_string(e.timeout_ms) +
                      " ms) " + where(e) + "; the worker was asked for its stack and killed";
    d.evidence = "finished " + std::to_string(e.tasks_done) + " tasks; " +
                 (e.stack ? "stack taken" : "it did not answer the stack request");
    d.remedy = "Raise timeout if samples are legitimately slow; otherwise look for a deadlock "
               "(a lock inherited across fork, a network or file read with no timeout).";
  } else if (e.status.signal == 0 && !e.init_error.empty()) {
    diagnose_init_error(e, d);
  } else if (e.status.signal == 0 && e.status.exit_code == worker::kDescriptorsClosedExit) {
    d.cause = DeathCause::kExit;
    d.what_happened = "lost the descriptors it talks to the loader through (its task and done "
                      "eventfds were closed) " + where(e) + ", so it exited";
    d.evidence = "exit status " + std::to_string(e.status.exit_code) +
                 " (the worker's own check found its descriptors closed)";
    d.remedy = "Dataset code closed descriptors it did not open (os.closerange(3, ...), closing "
               "every descriptor after fork, a daemonizing library): close only the ones your "
               "code opened. docs/writing-a-dataset.md lists what a worker holds.";
  } else if (e.status.signal == 0) {
    d.cause = DeathCause::kExit;
    d.what_happened = "exited with code " + std::to_string(e.status.exit_code) + " " + where(e);
    d.evidence = "no signal; exit status " + std::to_string(e.status.exit_code);
    d.remedy = e.status.exit_code == kWorkerLoopFailed
                   ? "The worker's own loop raised an exception outside any sample (exit status "
                     "70); its message is on the worker's stderr. A CUDA error there means CUDA "
                     "was used in a forked worker: use start_method spawn or forkserver."
                   : "Dataset code (or a library it calls) called exit(); run with "
                     "num_workers = 0 to see it in this process.";
  } else {
    diagnose_signal(e, d);
  }
  const auto* record = e.hang ? &e.stack : &e.crash;
  if (*record) {
    d.frames = frames_after_signal(symbolize((*record)->frames, (*record)->pc, e.maps),
                                   (*record)->pc);
  }
  return d;
}

std::string summary_text(const DeathEvidence& e, const Diagnosis& d,
                         const std::string& report_path) {
  std::string s = "mploader: worker " + std::to_string(e.worker_id) + " (pid " +
                  std::to_string(e.pid) + ") died [" + to_string(d.cause) + "]: " +
                  d.what_happened + ". Evidence: " + d.evidence + ".";
  for (const InFlightBatch& b : e.in_flight) {
    s += " In flight: batch " + std::to_string(b.sequence) + " of epoch " +
         std::to_string(b.epoch) + ", indices " + index_list(b.indices) + ".";
  }
  if (!d.frames.empty()) s += " Top frame: " + d.frames.front().describe() + ".";
  if (e.quarantine) s += " Quarantine: " + e.quarantine->note + ".";
  s += " Remedy: " + d.remedy;
  s += report_path.empty() ? " (The crash report could not be written.)"
                           : " Full report: " + report_path + " (read it with mploader-report).";
  return s;
}

std::string si_code_name(int signal, int code) {
  if (code == SI_USER) return "SI_USER, sent by kill()";
  if (code == SI_TKILL) return "SI_TKILL, raised by the process";
  switch (signal) {
    case SIGSEGV:
      if (code == SEGV_MAPERR) return "SEGV_MAPERR, address not mapped";
      if (code == SEGV_ACCERR) return "SEGV_ACCERR, access not permitted";
      break;
    case SIGBUS:
      if (code == BUS_ADRALN) return "BUS_ADRALN, misaligned address";
      if (code == BUS_ADRERR) return "BUS_ADRERR, no backing page";
      if (code == BUS_OBJERR) return "BUS_OBJERR, hardware error";
      break;
    case SIGFPE:
      if (code == FPE_INTDIV) return "FPE_INTDIV, integer division by zero";
      if (code == FPE_INTOVF) return "FPE_INTOVF, integer overflow";
      break;
    default:
      break;
  }
  return "si_code " + std::to_string(code);
}

}  // namespace mploader::detail
