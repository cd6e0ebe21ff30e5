#include "ipc/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>

namespace mploader::ipc {
namespace {

std::string number(int64_t n) { return n < 0 ? std::string("unlimited") : std::to_string(n); }

}  // namespace

FdLimit fd_limit() {
  FdLimit l;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
    l.soft = r.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(r.rlim_cur);
    l.hard = r.rlim_max == RLIM_INFINITY ? -1 : static_cast<int64_t>(r.rlim_max);
  }
  return l;
}

std::string fd_limit_advice(int error) {
  if (error == ENFILE) {
    return "the whole system is out of open files (fs.file-max; /proc/sys/fs/file-nr shows the "
           "count): close files in other processes, or raise it with sysctl -w "
           "fs.file-max=<N> as root";
  }
  if (error != EMFILE) return "";
  const FdLimit l = fd_limit();
  // The hard limit is the most an unprivileged process can ask for; suggest it, or a
  // generous number when the soft limit is already there.
  const int64_t suggest = l.hard > l.soft ? l.hard : (l.soft > 0 ? l.soft * 4 : 4096);
  return "this process has used every descriptor its RLIMIT_NOFILE allows (soft limit " +
         number(l.soft) + ", hard limit " + number(l.hard) + "): raise the soft limit with " +
         "`ulimit -n " + std::to_string(suggest) + "` before starting the program" +
         (l.hard > l.soft ? "" : " after raising the hard limit as root (ulimit -Hn, "
                                 "LimitNOFILE= in a systemd unit, docker run --ulimit "
                                 "nofile=N:N)") +
         ", or use fewer workers";
}

}  // namespace mploader::ipc
