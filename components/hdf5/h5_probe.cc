// The metadata probe's child process and the parent's side of the pipe.
#include "hdf5/h5_probe.h"

#include "hdf5/h5_meta.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace mploader::hdf5::detail {
namespace {

// The child: describe, write the reply (the metadata or the error), exit without running the
// parent's atexit handlers or flushing its stdio buffers.
[[noreturn]] void run_probe_child(int out, const std::string& file,
                                  const std::vector<H5Field>& fields, bool swmr) {
  std::string reply;
  try {
    reply = nlohmann::json{{"fields", info_to_json(read_metadata(file, fields, swmr))}}.dump();
  } catch (const std::exception& e) {
    reply = nlohmann::json{{"error", e.what()}}.dump();
  } catch (...) {
    reply = R"j({"error":"mploader: H5Dataset: the metadata probe failed (unknown exception)"})j";
  }
  const char* p = reply.data();
  size_t left = reply.size();
  while (left > 0) {
    const ssize_t n = ::write(out, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::_exit(0);
}

// Reads the child's reply until it closes the pipe; false when `deadline` passes first.
bool read_reply(int in, std::chrono::steady_clock::time_point deadline, std::string& reply) {
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{in, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    reply.append(buffer, static_cast<size_t>(n));
  }
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "died of signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status)) + " and no reply";
}

}  // namespace

std::vector<H5FieldInfo> probe_metadata(const std::string& file, const std::vector<H5Field>& fields,
                                        bool swmr, double timeout_s) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw Error(error_prefix(file) + "cannot make the metadata probe's pipe (" +
                std::strerror(errno) + "). Fix: raise the open-file limit (ulimit -n)");
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw Error(error_prefix(file) + "cannot fork the metadata probe (" +
                std::strerror(err) + "). Fix: free memory or raise the process limit");
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    run_probe_child(pipe_fds[1], file, fields, swmr);
  }
  ::close(pipe_fds[1]);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  std::string reply;
  const bool finished = read_reply(pipe_fds[0], deadline, reply);
  ::close(pipe_fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) {
    throw Error(error_prefix(file) + "reading its metadata took over " +
                std::to_string(timeout_s) + " s; the probe process was killed. Fix: check the "
                "file system (a stalled network mount?), or raise H5DatasetOptions::"
                "probe_timeout_s");
  }
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || (!j.contains("fields") && !j.contains("error"))) {
    throw Error(error_prefix(file) + "the metadata probe process " +
                how_it_ended(status) + " while reading it: libhdf5 could not read the file. "
                "Fix: the file is damaged or cut short: write or copy it again");
  }
  if (j.contains("error")) throw Error(j.at("error").get<std::string>());
  return info_from_json(j.at("fields"));
}

}  // namespace mploader::hdf5::detail
