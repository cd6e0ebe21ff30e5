// A server that lies (components/remote/tests/lying_http_server.py): it cuts a download short, then
// answers the resumed request with another version of the object, another range, or a
// redirect loop. Started with the Python on PATH on 127.0.0.1; without it, ok() is false and
// why_not() says why: the test skips.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace shard_test {

class LyingServer {
 public:
  // `mode`: honest, etag, lastmod, range or redirect (the script's docstring); the object has
  // `size` bytes. `state`: a folder for the port file and the request log.
  LyingServer(const std::string& state, const std::string& mode, int64_t size) {
    const std::string port_file = state + "/port-" + mode;
    std::remove(port_file.c_str());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      std::freopen(log_of(state, mode).c_str(), "w", stderr);
      ::execlp("python3", "python3", MPLOADER_COMPONENT_TEST_DIR "/lying_http_server.py",
               port_file.c_str(), mode.c_str(), std::to_string(size).c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 1000 && port_ == 0; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        why_ = "python3 could not start lying_http_server.py (see " + log_of(state, mode) + ")";
        return;
      }
      std::ifstream(port_file) >> port_;
      if (port_ == 0) ::usleep(10000);
    }
    if (port_ == 0) why_ = "lying_http_server.py wrote no port within 10 s";
  }
  ~LyingServer() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return port_ != 0; }
  const std::string& why_not() const { return why_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/object"; }

  // Byte i of version 1 of the object, the version every honest answer has.
  static uint8_t byte_of_version1(int64_t i) { return static_cast<uint8_t>(i % 251); }

 private:
  static std::string log_of(const std::string& state, const std::string& mode) {
    return state + "/lying-" + mode + ".log";
  }
  pid_t pid_ = 0;
  int port_ = 0;
  std::string why_;
};

}  // namespace shard_test
