// The servers mploader-bench --workload remote reads from, started on 127.0.0.1 for the run
// and stopped with it: Debian's nginx serving the tar folder over HTTP, and moto_server (from
// the bench's Python environment) as an S3-compatible endpoint.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// One server process (its own process group, killed with the bench: PR_SET_PDEATHSIG).
class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts argv with stdout and stderr into `log`, then waits up to 15 s for 127.0.0.1:port
  // to accept connections. Throws std::runtime_error naming the program and its log.
  void start(const std::string& what, const std::vector<std::string>& argv,
             const std::string& log, int port);
  int port() const { return port_; }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
};

// A TCP port on 127.0.0.1 that nothing listens on now.
int free_loopback_port();

// nginx serving the files of `root` at http://127.0.0.1:<port>/, at most `rate` per connection
// (nginx's limit_rate: "20m"; "0": no limit), its access log (one line per response:
// "$request_method $uri $status $body_bytes_sent") in `state`/access.log.
class HttpFolderServer {
 public:
  HttpFolderServer(const std::string& root, const std::string& state, const std::string& rate);
  std::string url(const std::string& name) const;
  // Body bytes the server has sent so far, from its access log.
  int64_t bytes_sent() const;

 private:
  std::string state_;
  ServerProcess process_;
};

// moto_server next to `python` (the bench's Python), at http://127.0.0.1:<port>; the AWS_*
// variables of this process name its test credentials (set before starting it).
class S3Server {
 public:
  S3Server(const std::string& python, const std::string& state);
  std::string endpoint() const;

 private:
  ServerProcess process_;
};

}  // namespace bench
