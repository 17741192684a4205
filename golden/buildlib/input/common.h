// buildlib's host-side common header: dtypes, aliases, errors and the dtype switch.
#ifndef BUILDLIB_COMMON_H_
#define BUILDLIB_COMMON_H_

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// FP8 types where the toolkit has them (as TE's FP4_TYPE_SUPPORTED guards cuda_fp4.h).
#define BUILDLIB_FP8_SUPPORTED (CUDA_VERSION >= 11080)
#if BUILDLIB_FP8_SUPPORTED
#include <cuda_fp8.h>
#endif

#include <cassert>
#include <stdexcept>
#include <string>

#include "buildlib/quant.h"

// Passes of the rounding kernel's refinement: the build may set it (CMake -D), 2 otherwise.
#ifndef BUILDLIB_NUM_PASSES
#define BUILDLIB_NUM_PASSES 2
#endif

namespace buildlib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;

enum class DType : int {
  kFloat32 = kBuildlibFloat32,
  kFloat16 = kBuildlibFloat16,
  kBFloat16 = kBuildlibBFloat16,
};

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace buildlib

#define BUILDLIB_ERROR(what) ::buildlib::raise_error(__FILE__, __LINE__, (what))

#define BUILDLIB_CHECK(cond, what)     \
  do {                              \
    if (!(cond)) BUILDLIB_ERROR(what); \
  } while (false)

#define BUILDLIB_CHECK_CUDA(expr)                                            \
  do {                                                                    \
    const cudaError_t status_ = (expr);                                   \
    if (status_ != cudaSuccess) BUILDLIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

#define BUILDLIB_TYPE_SWITCH(dtype, type, ...)                           \
  switch (static_cast<::buildlib::DType>(dtype)) {                       \
    case ::buildlib::DType::kFloat32: {                                  \
      using type = ::buildlib::fp32;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::buildlib::DType::kFloat16: {                                  \
      using type = ::buildlib::fp16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::buildlib::DType::kBFloat16: {                                 \
      using type = ::buildlib::bf16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      BUILDLIB_ERROR("dtype not supported: " + std::to_string(dtype));   \
  }

#endif  // BUILDLIB_COMMON_H_
