// sharedlib internals: dtype aliases, the dtype switch and the CUDA error check.
#ifndef SHAREDLIB_COMMON_H_
#define SHAREDLIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "sharedlib/scale.h"

namespace sharedlib {

using fp32 = float;
using fp16 = __half;
using bf16 = __nv_bfloat16;

enum class DType { kFloat32, kFloat16, kBFloat16 };

inline void check_cuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

}  // namespace sharedlib

#define SHAREDLIB_TYPE_SWITCH(dtype, type, ...)                   \
  switch (dtype) {                                                \
    case ::sharedlib::DType::kFloat32: {                          \
      using type = ::sharedlib::fp32;                             \
      { __VA_ARGS__ }                                             \
    } break;                                                      \
    case ::sharedlib::DType::kFloat16: {                          \
      using type = ::sharedlib::fp16;                             \
      { __VA_ARGS__ }                                             \
    } break;                                                      \
    case ::sharedlib::DType::kBFloat16: {                         \
      using type = ::sharedlib::bf16;                             \
      { __VA_ARGS__ }                                             \
    } break;                                                      \
    default:                                                      \
      throw std::invalid_argument("sharedlib: unsupported dtype"); \
  }

#endif  // SHAREDLIB_COMMON_H_
