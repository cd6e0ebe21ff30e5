// The CUDA runtime is opened with dlopen, not linked (CUDA::cudart), because:
// - libmploader.so must load on machines without libcudart (CI and test machines without a
//   driver, CPU boxes of libtorch users); a linked cudart would make the whole library fail to
//   load there, and the static cudart would add a second runtime to a CUDA libtorch's process;
// - with a CUDA libtorch, libcudart is already loaded, and dlopen returns that same copy, so
//   pinning and libtorch's copies see one runtime.
// The headers still come from the toolkit (MPLOADER_WITH_CUDA), so the signatures are checked.
#include "util/cuda_pinning.h"

#include "util/log.h"
#include "util/torch_compat.h"

#include <ATen/Context.h>

#include <mutex>

#if MPLOADER_WITH_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

namespace mploader::detail::cuda {
namespace {

#if MPLOADER_WITH_CUDA

struct Runtime {
  decltype(&cudaGetDeviceCount) get_device_count = nullptr;
  decltype(&cudaHostRegister) host_register = nullptr;
  decltype(&cudaHostUnregister) host_unregister = nullptr;
  decltype(&cudaGetErrorString) error_string = nullptr;
};

template <typename F>
bool bind(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

// The runtime a CUDA libtorch already loaded, else one on the library path, else the one
// CMake found at build time. The loaded one is looked for first, by each soname, without
// loading anything: dlopen("libcudart.so") would load a second runtime beside libtorch's
// libcudart.so.13 (a toolkit's copy on the library path), whose registrations libtorch's
// runtime does not see (Tensor::is_pinned() false, copies staged).
std::optional<std::string> open_runtime(Runtime& rt) {
  const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so",
                         MPLOADER_CUDART_PATH};
  void* library = nullptr;
  std::string tried;
  for (int mode : {RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
    for (const char* name : names) {
      if (*name == '\0' || library) continue;
      library = dlopen(name, mode);
      if (!library && !(mode & RTLD_NOLOAD)) tried += std::string(tried.empty() ? "" : ", ") + name;
    }
  }
  if (!library) return "the CUDA runtime is not installed (dlopen found none of " + tried + ")";
  if (!bind(library, "cudaGetDeviceCount", rt.get_device_count) ||
      !bind(library, "cudaHostRegister", rt.host_register) ||
      !bind(library, "cudaHostUnregister", rt.host_unregister) ||
      !bind(library, "cudaGetErrorString", rt.error_string)) {
    return std::string("the CUDA runtime found lacks a needed function (") + dlerror() + ")";
  }
  return std::nullopt;
}

Runtime g_runtime;

std::optional<std::string> probe() {
  if (auto reason = open_runtime(g_runtime)) return reason;
  int devices = 0;
  const cudaError_t rc = g_runtime.get_device_count(&devices);
  if (rc != cudaSuccess) {
    return std::string("no CUDA device (cudaGetDeviceCount: ") + g_runtime.error_string(rc) + ")";
  }
  if (devices == 0) return std::string("no CUDA device (cudaGetDeviceCount: 0 devices)");
  if (!at::hasCUDA()) {
    return std::string("this libtorch is built without CUDA, so batches cannot go to a GPU");
  }
  // libtorch counts memory as pinned (Tensor::is_pinned(), the copies' pinned path) only once
  // it has started CUDA itself: start it here, as the first copy to a GPU would.
  try {
#if MPLOADER_TORCH_AT_LEAST(2, 6)
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
#else
    at::globalContext().lazyInitCUDA();
#endif
  } catch (const c10::Error& e) {
    return std::string("libtorch could not start CUDA (") + e.what_without_backtrace() + ")";
  }
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(g_runtime.host_register), &where) != 0) {
    log().info("mploader: pin_memory: rings are pinned through {}", where.dli_fname);
  }
  return std::nullopt;
}

#else

std::optional<std::string> probe() {
  return std::string("mploader was built without CUDA (MPLOADER_WITH_CUDA=OFF)");
}

#endif

std::once_flag g_probed;
std::optional<std::string> g_reason;

}  // namespace

std::optional<std::string> pinning_unavailable_reason() {
  std::call_once(g_probed, [] {
    g_reason = probe();
    if (g_reason) {
      log().info("mploader: pin_memory: {}; batches stay in unpinned shared memory", *g_reason);
    }
  });
  return g_reason;
}

#if MPLOADER_WITH_CUDA

bool pin(void* base, size_t bytes) {
  if (pinning_unavailable_reason()) return false;
  // Portable: pinned for every CUDA context, not only the current device's.
  const cudaError_t rc = g_runtime.host_register(base, bytes, cudaHostRegisterPortable);
  if (rc != cudaSuccess) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      log().warn("mploader: pin_memory: cudaHostRegister of a {}-byte ring failed ({}); its "
                 "batches are copied to the GPU from unpinned memory. Check `ulimit -l` "
                 "(locked memory) and the size of the rings.",
                 bytes, g_runtime.error_string(rc));
    });
    return false;
  }
  return true;
}

void unpin(void* base) {
  const cudaError_t rc = g_runtime.host_unregister(base);
  if (rc != cudaSuccess) {
    log().warn("mploader: cudaHostUnregister failed ({})", g_runtime.error_string(rc));
  }
}

#else

bool pin(void*, size_t) {
  pinning_unavailable_reason();
  return false;
}

void unpin(void*) {}

#endif

}  // namespace mploader::detail::cuda
