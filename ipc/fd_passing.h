// Passing file descriptors between processes over a Unix socket (SCM_RIGHTS). Used for one-off
// overflow segments; later for spawn. The socket pair is created before fork.
#pragma once

#include "ipc/status.h"
#include "ipc/unique_fd.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::ipc {

struct SocketPair {
  UniqueFd parent;  // kept by the main process
  UniqueFd child;   // kept by the worker
};

Result<SocketPair> make_socket_pair();
// Sends `fd` with an 8-byte tag (for example the descriptor id it belongs to).
Status send_fd(int socket, int fd, uint64_t tag);
// Receives one fd and its tag; blocks until one arrives.
struct ReceivedFd {
  UniqueFd fd;
  uint64_t tag = 0;
};
Result<ReceivedFd> receive_fd(int socket);

// Several descriptors with a text payload (a forkserver request). At most kMaxFdsPerMessage.
constexpr size_t kMaxFdsPerMessage = 40;
struct Message {
  std::string text;
  std::vector<int> fds;  // the sender's: it keeps them
};
Status send_message(int socket, const Message& message);
struct ReceivedMessage {
  std::string text;
  std::vector<UniqueFd> fds;  // the receiver's own copies (close-on-exec)
};
// Blocks until a message arrives; an orderly close by the peer is EPIPE.
Result<ReceivedMessage> receive_message(int socket);

}  // namespace mploader::ipc
