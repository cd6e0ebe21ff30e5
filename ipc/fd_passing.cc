#include "ipc/fd_passing.h"

#include <sys/socket.h>

#include <cstring>

namespace mploader::ipc {

Result<SocketPair> make_socket_pair() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return last_error("socketpair");
  }
  return SocketPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// One descriptor with its tag: a message whose text is the tag.
Status send_fd(int socket, int fd, uint64_t tag) {
  return send_message(socket, Message{std::to_string(tag), {fd}});
}

namespace {
Result<ReceivedMessage> receive_up_to(int socket, size_t max_text);
}  // namespace

Result<ReceivedFd> receive_fd(int socket) {
  // The text is only a tag: a small buffer, not receive_message's 64 KiB on every batch.
  auto m = receive_up_to(socket, 64);
  if (!m.ok()) return m.error();
  if (m.value().fds.size() != 1) {  // the ones that came close with `m`
    return SysError{"recvmsg(SCM_RIGHTS)", EBADMSG,
                    "expected one descriptor, got " + std::to_string(m.value().fds.size())};
  }
  return ReceivedFd{std::move(m.value().fds[0]), std::stoull(m.value().text)};
}

Status send_message(int socket, const Message& m) {
  if (m.fds.size() > kMaxFdsPerMessage) return SysError{"sendmsg", EINVAL, "too many fds"};
  iovec iov{const_cast<char*>(m.text.data()), m.text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!m.fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * m.fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * m.fds.size());
    std::memcpy(CMSG_DATA(c), m.fds.data(), sizeof(int) * m.fds.size());
  }
  ssize_t rc;
  do {
    rc = sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return last_error("sendmsg");
  return Ok{};
}

Result<ReceivedMessage> receive_message(int socket) { return receive_up_to(socket, 64 * 1024); }

namespace {
Result<ReceivedMessage> receive_up_to(int socket, size_t max_text) {
  std::vector<char> buffer(max_text);
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t rc;
  do {
    rc = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return last_error("recvmsg");
  if (rc == 0) return SysError{"recvmsg", EPIPE, "the peer closed the socket"};
  ReceivedMessage m;
  m.text.assign(buffer.data(), static_cast<size_t>(rc));
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    std::vector<int> fds(n);
    std::memcpy(fds.data(), CMSG_DATA(c), n * sizeof(int));
    m.fds.reserve(m.fds.size() + n);  // so that wrapping them cannot throw halfway
    for (int fd : fds) m.fds.emplace_back(fd);
  }
  if (msg.msg_flags & MSG_CTRUNC) {  // the ones that did come close with `m`
    return SysError{"recvmsg", EMFILE, "descriptors were dropped (open-file limit?)"};
  }
  return m;
}
}  // namespace

}  // namespace mploader::ipc
