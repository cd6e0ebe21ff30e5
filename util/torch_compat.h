// What differs between the libtorch versions mploader builds against, in one place: Debian's
// libtorch-dev 1.13 (the compatibility build) and libtorch 2.x (the default, PyPI's torch 2.13;
// other 2.x releases are not built by CI). Everything else in the code base is the same for
// both. Internal: the library, its tests and examples include it, installed headers do not.
#pragma once

#include <torch/version.h>

#define MPLOADER_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if __has_include(<torch/csrc/distributed/c10d/ProcessGroup.hpp>)
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace mploader::compat {

// The c10d::ProcessGroup over one Gloo backend, the group torch.distributed gives a Python
// program. `gloo` is a c10d::ProcessGroupGloo (a template parameter so that only files that
// include its header, which needs gloo's, instantiate this).
//   1.13: ProcessGroupGloo derives from ProcessGroup: the group is the backend itself.
//   2.x:  ProcessGroupGloo derives from c10d::Backend, and a ProcessGroup holds one backend per
//         device type; (store, rank, size) is 2.13's constructor (2.0 to 2.5 also took Options).
template <typename GlooBackend>
c10::intrusive_ptr<c10d::ProcessGroup> process_group_of(
    const c10::intrusive_ptr<GlooBackend>& gloo, const c10::intrusive_ptr<c10d::Store>& store) {
#if MPLOADER_TORCH_AT_LEAST(2, 0)
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, gloo->getRank(), gloo->getSize());
  group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  return group;
#else
  (void)store;
  return gloo;
#endif
}

}  // namespace mploader::compat
#endif
