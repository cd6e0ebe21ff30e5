// A real HTTP server for the remote tests: Debian's nginx, started on 127.0.0.1 on a free
// port, serving a folder with range support, and logging every request with its status and
// Range. It can be killed (the whole process group, SIGKILL) and started again on the same
// port, answer 503 while a flag file exists, and send at most `rate` bytes a second.
// Without nginx, ok() is false and why_not() says why: the test skips.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shard_test {

inline const char* kNginx = "/usr/sbin/nginx";

// A port the kernel says is free now.
inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(s);
  return ntohs(a.sin_port);
}

inline bool port_answers(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

class NginxServer {
 public:
  // Serves `root` (a folder) from `state` (a folder for its config, logs and flag).
  NginxServer(std::string root, std::string state, const std::string& rate = "0")
      : root_(std::move(root)), state_(std::move(state)), port_(free_port()) {
    if (::access(kNginx, X_OK) != 0) {
      why_ = std::string(kNginx) + " is missing: scripts/install-deps installs nginx-light";
      return;
    }
    ::mkdir((state_ + "/tmp").c_str(), 0755);
    write_config(rate);
    start();
  }
  ~NginxServer() { kill(); }
  bool ok() const { return pid_ > 0; }
  const std::string& why_not() const { return why_; }
  std::string url(const std::string& name) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
  }
  // 503 for every request while on.
  void fail_with_503(bool on) {
    if (on) std::ofstream(state_ + "/fail-503") << "on";
    else ::unlink((state_ + "/fail-503").c_str());
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);  // master and workers: a crash, not a shutdown
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  void start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::execl(kNginx, kNginx, "-p", state_.c_str(), "-c", (state_ + "/nginx.conf").c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    for (int i = 0; i < 500 && !port_answers(port_); ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        why_ = "nginx exited at start: " + error_log();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // The access log's lines: "METHOD URI STATUS BYTES RANGE END_S SECONDS" (when the response
  // ended, in seconds since the epoch, and how long it took).
  // nginx logs a request after it has sent the response, so a client can hold the whole body
  // before its line is written: the log is read until it stays the same for 30 ms (1 s at most).
  std::vector<std::string> requests() const {
    std::vector<std::string> out = read_log();
    for (int waited = 0; waited < 1000; waited += 30) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      std::vector<std::string> again = read_log();
      if (again == out) break;
      out = std::move(again);
    }
    return out;
  }
  // GETs of `uri` ("/shard-0.tar") answered with `status`.
  int count(const std::string& uri, int status) const {
    int n = 0;
    for (const std::string& line : requests()) {
      std::istringstream words(line);
      std::string method, path;
      int code = 0;
      words >> method >> path >> code;
      n += method == "GET" && path == uri && code == status;
    }
    return n;
  }
  std::vector<std::string> read_log() const {
    std::ifstream in(state_ + "/access.log");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  std::string error_log() const {
    std::ifstream in(state_ + "/error.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str().substr(0, 2000);
  }

 private:
  void write_config(const std::string& rate) {
    std::ofstream c(state_ + "/nginx.conf");
    if (::geteuid() == 0) c << "user root;\n";  // workers read the test's root-owned files
    c << "daemon off;\nworker_processes 1;\npid " << state_ << "/nginx.pid;\n"
      << "error_log " << state_ << "/error.log info;\n"
      << "events { worker_connections 256; }\n"
      << "http {\n"
      << "  log_format shards '$request_method $uri $status $body_bytes_sent $http_range $msec "
         "$request_time';\n"
      << "  access_log " << state_ << "/access.log shards;\n"
      << "  client_body_temp_path " << state_ << "/tmp;\n"
      << "  proxy_temp_path " << state_ << "/tmp;\n"
      << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << root_ << ";\n"
      << "    location / {\n      if (-f " << state_ << "/fail-503) { return 503; }\n"
      << "      dav_methods PUT;\n      create_full_put_path on;\n"
      << "      client_max_body_size 0;\n"
      << "      limit_rate " << rate << ";\n    }\n  }\n}\n";
  }

  std::string root_, state_, why_;
  int port_;
  pid_t pid_ = 0;
};

}  // namespace shard_test
