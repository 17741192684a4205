// scopelib's host-side common header: dtypes, aliases, errors and the dtype switch.
#ifndef SCOPELIB_COMMON_H_
#define SCOPELIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "scopelib/quant.h"

namespace scopelib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;

enum class DType : int {
  kFloat32 = kScopelibFloat32,
  kFloat16 = kScopelibFloat16,
  kBFloat16 = kScopelibBFloat16,
};

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace scopelib

#define SCOPELIB_ERROR(what) ::scopelib::raise_error(__FILE__, __LINE__, (what))

#define SCOPELIB_CHECK(cond, what)     \
  do {                              \
    if (!(cond)) SCOPELIB_ERROR(what); \
  } while (false)

#define SCOPELIB_CHECK_CUDA(expr)                                            \
  do {                                                                    \
    const cudaError_t status_ = (expr);                                   \
    if (status_ != cudaSuccess) SCOPELIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

#define SCOPELIB_TYPE_SWITCH(dtype, type, ...)                           \
  switch (static_cast<::scopelib::DType>(dtype)) {                       \
    case ::scopelib::DType::kFloat32: {                                  \
      using type = ::scopelib::fp32;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::scopelib::DType::kFloat16: {                                  \
      using type = ::scopelib::fp16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::scopelib::DType::kBFloat16: {                                 \
      using type = ::scopelib::bf16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      SCOPELIB_ERROR("dtype not supported: " + std::to_string(dtype));   \
  }

#endif  // SCOPELIB_COMMON_H_
