// NVRTC compile + CUDA runtime library-API load and launch behind flaglib::rtc::KernelManager.
#include "rtc.h"

#include <nvrtc.h>

#include <memory>

#include "../common.h"

namespace flaglib {
namespace rtc {
namespace {

void check_nvrtc(nvrtcResult status, const std::string &what) {
  if (status != NVRTC_SUCCESS) FLAGLIB_ERROR(what + ": " + nvrtcGetErrorString(status));
}

void check_runtime(cudaError_t status, const std::string &what) {
  if (status != cudaSuccess) FLAGLIB_ERROR(what + ": " + cudaGetErrorString(status));
}

int current_device() {
  int device = 0;
  FLAGLIB_CHECK_CUDA(cudaGetDevice(&device));
  return device;
}

struct ProgramDeleter {
  void operator()(nvrtcProgram *prog) const {
    nvrtcDestroyProgram(prog);
    delete prog;
  }
};

}  // namespace

KernelManager &KernelManager::instance() {
  static KernelManager manager;
  return manager;
}

std::string KernelManager::key_for(const std::string &label, int device) {
  return label + "@device" + std::to_string(device);
}

bool KernelManager::is_compiled(const std::string &label) const {
  const std::string key = key_for(label, current_device());
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return compiled_.count(key) > 0;
}

void KernelManager::compile(const std::string &label, const std::string &kernel_name_expression,
                            const std::string &code, const std::string &filename,
                            const std::vector<std::string> &options,
                            const std::vector<Header> &headers) {
  const int device = current_device();
  const std::string key = key_for(label, device);
  // NOTE: one exclusive lock for the whole compile keeps "one compile per variant" simple.
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (compiled_.count(key) > 0) return;

  int major = 0, minor = 0;
  FLAGLIB_CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FLAGLIB_CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  std::vector<std::string> all_options = {"--gpu-architecture=sm_" + std::to_string(major) +
                                          std::to_string(minor)};
#ifdef FLAGLIB_CUDA_INCLUDE_DIR
  // NOTE: CUDA 13 keeps libcu++ (cuda/std/...) under include/cccl.
  all_options.push_back(std::string("-I") + FLAGLIB_CUDA_INCLUDE_DIR);
  all_options.push_back(std::string("-I") + FLAGLIB_CUDA_INCLUDE_DIR + "/cccl");
#endif
  all_options.insert(all_options.end(), options.begin(), options.end());
  std::vector<const char *> option_ptrs;
  for (const auto &o : all_options) option_ptrs.push_back(o.c_str());

  std::unique_ptr<nvrtcProgram, ProgramDeleter> prog(new nvrtcProgram(nullptr));
  std::vector<const char *> header_contents, header_names;
  for (const auto &h : headers) {
    header_contents.push_back(h.content.c_str());
    header_names.push_back(h.include_name.c_str());
  }
  check_nvrtc(nvrtcCreateProgram(prog.get(), code.c_str(), filename.c_str(),
                                 static_cast<int>(headers.size()), header_contents.data(),
                                 header_names.data()),
              "nvrtcCreateProgram(" + label + ")");
  check_nvrtc(nvrtcAddNameExpression(*prog, kernel_name_expression.c_str()),
              "nvrtcAddNameExpression(" + kernel_name_expression + ")");
  const nvrtcResult compile_status =
      nvrtcCompileProgram(*prog, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  if (compile_status != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(*prog, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(*prog, &log[0]);
    FLAGLIB_ERROR("NVRTC failed to compile " + label + " (" + kernel_name_expression + "):\n" + log);
  }
  const char *lowered = nullptr;
  check_nvrtc(nvrtcGetLoweredName(*prog, kernel_name_expression.c_str(), &lowered),
              "nvrtcGetLoweredName(" + kernel_name_expression + ")");
  const std::string mangled(lowered);
  size_t cubin_size = 0;
  check_nvrtc(nvrtcGetCUBINSize(*prog, &cubin_size), "nvrtcGetCUBINSize");
  std::string cubin(cubin_size, '\0');
  check_nvrtc(nvrtcGetCUBIN(*prog, &cubin[0]), "nvrtcGetCUBIN");

  Compiled entry;
  check_runtime(cudaLibraryLoadData(&entry.library, cubin.data(), nullptr, nullptr, 0, nullptr,
                                    nullptr, 0),
                "cudaLibraryLoadData(" + label + ")");
  check_runtime(cudaLibraryGetKernel(&entry.kernel, entry.library, mangled.c_str()),
                "cudaLibraryGetKernel(" + mangled + ")");
  compiled_.emplace(key, entry);
}

void KernelManager::set_function_attribute(const std::string &label, cudaFuncAttribute attribute,
                                           int value) {
  const std::string key = key_for(label, current_device());
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const auto it = compiled_.find(key);
  FLAGLIB_CHECK(it != compiled_.end(), "RTC kernel attribute set before compilation: " + label);
  check_runtime(cudaFuncSetAttribute(reinterpret_cast<const void *>(it->second.kernel), attribute,
                                     value),
                "cudaFuncSetAttribute(" + label + ")");
}

void KernelManager::launch_with_args(const std::string &label, dim3 grid, dim3 block,
                                     unsigned shared_mem_bytes, cudaStream_t stream, void **args) {
  const std::string key = key_for(label, current_device());
  cudaKernel_t kernel = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const auto it = compiled_.find(key);
    FLAGLIB_CHECK(it != compiled_.end(), "RTC kernel launched before compilation: " + label);
    kernel = it->second.kernel;
  }
  // NOTE: cudaLaunchKernel accepts a cudaKernel_t from cudaLibraryGetKernel in place of a
  // __global__ function address.
  const cudaError_t status = cudaLaunchKernel(reinterpret_cast<const void *>(kernel), grid, block,
                                              args, shared_mem_bytes, stream);
  if (status != cudaSuccess) {
    // NOTE: a failed launch also sets the runtime's last error; clear it as the static path's
    // cudaGetLastError() check does, or the caller's next check reports this failure again.
    (void)cudaGetLastError();
  }
  check_runtime(status, "cudaLaunchKernel(" + label + ")");
}

}  // namespace rtc
}  // namespace flaglib
