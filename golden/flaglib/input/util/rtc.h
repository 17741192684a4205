// Minimal NVRTC layer: compile a kernel once per (label, device) and launch it by label.
// Thread-safe; compiled code is loaded with the runtime's library API and lives for the process.
#ifndef FLAGLIB_UTIL_RTC_H_
#define FLAGLIB_UTIL_RTC_H_

#include <cuda_runtime.h>

#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace flaglib {
namespace rtc {

// An NVRTC in-memory header: `content` is what `#include "<include_name>"` reads.
struct Header {
  std::string content;
  std::string include_name;
};

class KernelManager {
 public:
  static KernelManager &instance();

  // Compiles `code` (named `filename` in diagnostics) for the current device and keeps the
  // function named by `kernel_name_expression` (e.g. "ns::kernel<float, 32>") under `label`.
  // A second call with a label that is already compiled does nothing. The build-time CUDA include
  // directory is always on the include path; `headers` are extra in-memory headers.
  void compile(const std::string &label, const std::string &kernel_name_expression,
               const std::string &code, const std::string &filename,
               const std::vector<std::string> &options = {},
               const std::vector<Header> &headers = {});

  // cudaFuncSetAttribute for a compiled kernel (e.g. cudaFuncAttributeMaxDynamicSharedMemorySize).
  void set_function_attribute(const std::string &label, cudaFuncAttribute attribute, int value);

  bool is_compiled(const std::string &label) const;

  template <typename... Args>
  void launch(const std::string &label, dim3 grid, dim3 block, unsigned shared_mem_bytes,
              cudaStream_t stream, Args... args) {
    void *arg_ptrs[] = {static_cast<void *>(&args)..., nullptr};
    launch_with_args(label, grid, block, shared_mem_bytes, stream, arg_ptrs);
  }

  KernelManager(const KernelManager &) = delete;
  KernelManager &operator=(const KernelManager &) = delete;

 private:
  KernelManager() = default;

  struct Compiled {
    cudaLibrary_t library = nullptr;
    cudaKernel_t kernel = nullptr;
  };

  void launch_with_args(const std::string &label, dim3 grid, dim3 block, unsigned shared_mem_bytes,
                        cudaStream_t stream, void **args);
  static std::string key_for(const std::string &label, int device);

  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, Compiled> compiled_;
};

}  // namespace rtc
}  // namespace flaglib

#endif  // FLAGLIB_UTIL_RTC_H_
