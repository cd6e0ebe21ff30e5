// The remote workload's servers (remote_servers.h).
#include "bench/remote/remote_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace bench {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

bool accepts(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

}  // namespace

int free_loopback_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(s);
    throw std::runtime_error("remote: cannot bind a port on 127.0.0.1 for the bench's servers");
  }
  ::close(s);
  return ntohs(a.sin_port);
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);  // the group: nginx's worker and moto's threads with it
  ::waitpid(pid_, nullptr, 0);
}

void ServerProcess::start(const std::string& what, const std::vector<std::string>& argv,
                          const std::string& log, int port) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  port_ = port;
  for (int i = 0; i < 1500; ++i) {
    if (accepts(port)) return;
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = 0;
  throw std::runtime_error("remote: " + what + " did not start listening on 127.0.0.1:" +
                           std::to_string(port) + " within 15 s; its output is in " + log);
}

HttpFolderServer::HttpFolderServer(const std::string& root, const std::string& state,
                                   const std::string& rate)
    : state_(state) {
  const char* nginx = "/usr/sbin/nginx";
  if (::access(nginx, X_OK) != 0) {
    throw std::runtime_error("remote: /usr/sbin/nginx is not installed; run "
                             "scripts/install-deps (nginx-light)");
  }
  const int port = free_loopback_port();
  std::ofstream c(state + "/nginx.conf");
  if (::geteuid() == 0) c << "user root;\n";  // its worker reads the bench cache's files
  c << "daemon off;\nworker_processes 1;\npid " << state << "/nginx.pid;\n"
    << "error_log " << state << "/error.log;\nevents { worker_connections 256; }\n"
    << "http {\n  log_format bytes '$request_method $uri $status $body_bytes_sent';\n"
    << "  access_log " << state << "/access.log bytes;\n"
    << "  client_body_temp_path " << state << ";\n"
    << "  server {\n    listen 127.0.0.1:" << port << ";\n    root " << root << ";\n"
    << "    limit_rate " << rate << ";\n  }\n}\n";
  c.close();
  process_.start("nginx", {nginx, "-c", state + "/nginx.conf", "-p", state},
                 state + "/nginx.out", port);
}

std::string HttpFolderServer::url(const std::string& name) const {
  return "http://127.0.0.1:" + std::to_string(process_.port()) + "/" + name;
}

int64_t HttpFolderServer::bytes_sent() const {
  std::ifstream in(state_ + "/access.log");
  int64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string method, uri;
    int status = 0;
    int64_t bytes = 0;
    if (words >> method >> uri >> status >> bytes) total += bytes;
  }
  return total;
}

S3Server::S3Server(const std::string& python, const std::string& state) {
  const std::string moto = python.substr(0, python.rfind('/') + 1) + "moto_server";
  if (::access(moto.c_str(), X_OK) != 0) {
    throw std::runtime_error("remote: " + moto + " is not installed; run scripts/install-deps "
                             "(it puts moto[server] in the .venv)");
  }
  const int port = free_loopback_port();
  process_.start("moto_server", {moto, "-H", "127.0.0.1", "-p", std::to_string(port)},
                 state + "/moto.log", port);
}

std::string S3Server::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(process_.port());
}

}  // namespace bench
