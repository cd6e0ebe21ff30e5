// gather_loader_state: every rank's Loader state over a c10d process group, merged into the job
// state on every rank. Two allgathers: the texts' lengths, then the texts padded to the longest,
// so that the collectives' shapes are the same on every rank whatever the texts hold. Kept in
// its own file: the c10d headers are heavy, and a libtorch without them builds the rest.
// Thread-safety: reentrant; the process group's own rules apply to concurrent collectives.
#include <mploader/elastic.h>
#include <mploader/errors.h>

#include "util/c10d_collectives.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace mploader {

#ifdef MPLOADER_HAVE_C10D
namespace {

using detail::allgather;

template <typename Group>
std::string gather_over(Group& group, const std::string& rank_state,
                        std::chrono::milliseconds timeout) {
  at::Tensor length = at::full({1}, static_cast<int64_t>(rank_state.size()), at::kLong);
  int64_t longest = 0;
  for (const at::Tensor& t : allgather(group, length, timeout)) {
    longest = std::max(longest, t.item<int64_t>());
  }
  at::Tensor text = at::zeros({std::max<int64_t>(longest, 1)}, at::kByte);
  std::memcpy(text.data_ptr<uint8_t>(), rank_state.data(), rank_state.size());
  std::vector<std::string> states;
  const std::vector<at::Tensor> texts = allgather(group, text, timeout);
  for (const at::Tensor& t : texts) {
    const char* bytes = reinterpret_cast<const char*>(t.data_ptr<uint8_t>());
    states.emplace_back(bytes, strnlen(bytes, static_cast<size_t>(longest)));
  }
  return merge_loader_states(states);
}

}  // namespace

std::string gather_loader_state(c10d::ProcessGroup& group, const std::string& rank_state,
                                std::chrono::milliseconds timeout) {
  return gather_over(group, rank_state, timeout);
}

std::string gather_loader_state(c10d::Backend& group, const std::string& rank_state,
                                std::chrono::milliseconds timeout) {
  return gather_over(group, rank_state, timeout);
}

#else

namespace {

[[noreturn]] void no_c10d() {
  throw Error("mploader: gather_loader_state needs c10d, and the libtorch mploader was built "
              "against has no torch/csrc/distributed/c10d headers; build with a libtorch that "
              "has them, or write each rank's state_dict() to a file and merge them with "
              "merge_loader_states()");
}

}  // namespace

std::string gather_loader_state(c10d::ProcessGroup&, const std::string&,
                                 std::chrono::milliseconds) {
  no_c10d();
}

std::string gather_loader_state(c10d::Backend&, const std::string&, std::chrono::milliseconds) {
  no_c10d();
}

#endif

}  // namespace mploader
