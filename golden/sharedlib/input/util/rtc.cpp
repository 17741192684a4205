// sharedlib's NVRTC layer: NVRTC compile to a cubin for the current device, driver-API load.
#include "rtc.h"

#include <nvrtc.h>

namespace sharedlib {
namespace rtc {
namespace {

void check_nvrtc(nvrtcResult status, const std::string &what) {
  if (status != NVRTC_SUCCESS) SHAREDLIB_ERROR(what + ": " + nvrtcGetErrorString(status));
}

}  // namespace

void *driver_symbol(const char *name) {
  static std::mutex mutex;
  static std::unordered_map<std::string, void *> found;
  std::lock_guard<std::mutex> guard(mutex);
  void *&fn = found[name];
  if (fn == nullptr) {
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    SHAREDLIB_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, CUDA_VERSION, cudaEnableDefault,
                                                    &status) == cudaSuccess &&
                       status == cudaDriverEntryPointSuccess,
                   std::string("no CUDA driver function ") + name);
  }
  return fn;
}

void check_driver(CUresult status, const char *what) {
  if (status != CUDA_SUCCESS) SHAREDLIB_ERROR(std::string(what) + " failed: CUresult " + std::to_string(status));
}

Kernel::Kernel(std::string lowered_name, std::string cubin)
    : lowered_name_(std::move(lowered_name)), cubin_(std::move(cubin)) {}

CUfunction Kernel::get_function(int device) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto found = functions_.find(device);
  if (found != functions_.end()) return found->second;
  SHAREDLIB_CHECK(cudaSetDevice(device) == cudaSuccess, "cudaSetDevice failed");   // primary context
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  SHAREDLIB_CALL_DRIVER(cuModuleLoadData, &module, cubin_.data());
  SHAREDLIB_CALL_DRIVER(cuModuleGetFunction, &function, module, lowered_name_.c_str());
  functions_.emplace(device, function);   // the module lives as long as the process
  return function;
}

KernelManager &KernelManager::instance() {
  static KernelManager manager;
  return manager;
}

std::string KernelManager::get_kernel_cache_key(const std::string &kernel_label, int device) const {
  return kernel_label + "@device" + std::to_string(device);
}

bool KernelManager::is_compiled(const std::string &kernel_label) const {
  int device = 0;
  SHAREDLIB_CHECK(cudaGetDevice(&device) == cudaSuccess, "cudaGetDevice failed");
  std::lock_guard<std::mutex> guard(lock_);
  return kernel_cache_.count(get_kernel_cache_key(kernel_label, device)) > 0;
}

void KernelManager::compile(const std::string &kernel_label, const std::string &kernel_name,
                            const std::string &code, const std::string &filename) {
  int device = 0;
  SHAREDLIB_CHECK(cudaGetDevice(&device) == cudaSuccess, "cudaGetDevice failed");
  cudaDeviceProp prop{};
  SHAREDLIB_CHECK(cudaGetDeviceProperties(&prop, device) == cudaSuccess, "cudaGetDeviceProperties failed");
  const std::vector<std::string> options = {
      "--std=c++17", "--gpu-architecture=sm_" + std::to_string(prop.major * 10 + prop.minor),
      std::string("-I") + SHAREDLIB_CUDA_INCLUDE_DIR, std::string("-I") + SHAREDLIB_CUDA_INCLUDE_DIR + "/cccl"};
  std::vector<const char *> option_ptrs;
  for (const auto &o : options) option_ptrs.push_back(o.c_str());

  nvrtcProgram program = nullptr;
  check_nvrtc(nvrtcCreateProgram(&program, code.c_str(), filename.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  check_nvrtc(nvrtcAddNameExpression(program, kernel_name.c_str()), "nvrtcAddNameExpression");
  const nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  if (result != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, &log[0]);
    nvrtcDestroyProgram(&program);
    SHAREDLIB_ERROR("NVRTC failed for " + filename + " (" + kernel_name + "):\n" + log);
  }
  const char *lowered = nullptr;
  check_nvrtc(nvrtcGetLoweredName(program, kernel_name.c_str(), &lowered), "nvrtcGetLoweredName");
  size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  check_nvrtc(nvrtcGetCUBIN(program, &cubin[0]), "nvrtcGetCUBIN");
  std::string name(lowered);
  nvrtcDestroyProgram(&program);

  std::lock_guard<std::mutex> guard(lock_);
  kernel_cache_.try_emplace(get_kernel_cache_key(kernel_label, device), std::move(name), std::move(cubin));
}

}  // namespace rtc
}  // namespace sharedlib
