// Passing file descriptors between processes over a Unix socket (SCM_RIGHTS). Used for one-off
// overflow segments; later for spawn. The socket pair is created before fork.
#pragma once

#include "ipc/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::ipc {

struct SocketPair {
  int parent = -1;  // kept by the main process
  int child = -1;   // kept by the worker
};

Result<SocketPair> make_socket_pair();
// Sends `fd` with an 8-byte tag (for example the descriptor id it belongs to).
Status send_fd(int socket, int fd, uint64_t tag);
// Receives one fd and its tag; blocks until one arrives.
struct ReceivedFd {
  int fd = -1;
  uint64_t tag = 0;
};
Result<ReceivedFd> receive_fd(int socket);

// Several descriptors with a text payload (a forkserver request). At most kMaxFdsPerMessage.
constexpr size_t kMaxFdsPerMessage = 8;
struct Message {
  std::string text;
  std::vector<int> fds;
};
Status send_message(int socket, const Message& message);
// Blocks until a message arrives; an orderly close by the peer is EPIPE.
Result<Message> receive_message(int socket);

}  // namespace mploader::ipc
