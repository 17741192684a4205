// sharedlib's NVRTC layer, as a library has it before it migrates kernels that need more: compile a
// kernel once per (label, device), launch it by label. Driver functions are reached through the
// runtime's driver entry points (no link against libcuda). It has no in-memory headers, no
// per-program options, no function attributes, no occupancy query and no cooperative launch:
// `codemod apply` adds those (rule key nvrtc_layer.extend) when a migration needs them.
#ifndef SHAREDLIB_UTIL_RTC_H_
#define SHAREDLIB_UTIL_RTC_H_

#include <cuda.h>
#include <cuda_runtime.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

// The error the layer and the generated stubs raise (rule key nvrtc_layer.error_macro).
#define SHAREDLIB_ERROR(what) throw std::runtime_error(std::string("sharedlib: ") + (what))
#define SHAREDLIB_CHECK(cond, what) \
  do {                             \
    if (!(cond)) SHAREDLIB_ERROR(what); \
  } while (false)
// Calls a CUDA driver function by name and checks its result: SHAREDLIB_CALL_DRIVER(cuFn, args...).
#define SHAREDLIB_CALL_DRIVER(fn, ...) \
  ::sharedlib::rtc::check_driver(::sharedlib::rtc::driver_function<decltype(&fn)>(#fn)(__VA_ARGS__), #fn)

namespace sharedlib {
namespace rtc {

// The address of a driver API function, looked up once per name through the CUDA runtime.
void *driver_symbol(const char *name);
void check_driver(CUresult status, const char *what);

template <typename Fn>
Fn driver_function(const char *name) {
  return reinterpret_cast<Fn>(driver_symbol(name));
}

// One compiled kernel: its code, loaded into each device's primary context on first use.
class Kernel {
 public:
  Kernel(std::string lowered_name, std::string cubin);
  CUfunction get_function(int device);

 private:
  std::string lowered_name_;
  std::string cubin_;
  std::unordered_map<int, CUfunction> functions_;
  std::mutex mutex_;
};

class KernelManager {
 public:
  static KernelManager &instance();

  // Compiles `code` for the current device and keeps the function named by `kernel_name` (a name
  // expression) under `kernel_label`. The build-time CUDA include directory is on the path.
  void compile(const std::string &kernel_label, const std::string &kernel_name,
               const std::string &code, const std::string &filename);

  bool is_compiled(const std::string &kernel_label) const;

  template <typename... ArgTs>
  void launch(const std::string &kernel_label, dim3 grid, dim3 block, unsigned shared_mem_bytes,
              cudaStream_t stream, ArgTs &&...args) {
    int device = 0;
    SHAREDLIB_CHECK(cudaGetDevice(&device) == cudaSuccess, "cudaGetDevice failed");
    CUfunction function = nullptr;
    {
      std::lock_guard<std::mutex> guard(lock_);
      auto found = kernel_cache_.find(get_kernel_cache_key(kernel_label, device));
      SHAREDLIB_CHECK(found != kernel_cache_.end(), "launch before compile: " + kernel_label);
      function = found->second.get_function(device);
    }
    void *params[] = {const_cast<void *>(static_cast<const void *>(&args))...};
    SHAREDLIB_CALL_DRIVER(cuLaunchKernel, function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                         shared_mem_bytes, static_cast<CUstream>(stream), params, nullptr);
  }

  KernelManager(const KernelManager &) = delete;
  KernelManager &operator=(const KernelManager &) = delete;

 private:
  KernelManager() = default;
  std::string get_kernel_cache_key(const std::string &kernel_label, int device) const;

  std::unordered_map<std::string, Kernel> kernel_cache_;
  mutable std::mutex lock_;
};

}  // namespace rtc
}  // namespace sharedlib

#endif  // SHAREDLIB_UTIL_RTC_H_
