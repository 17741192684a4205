// ctlib's host-side common header: dtypes, aliases, errors and the dtype switch.
#ifndef CTLIB_COMMON_H_
#define CTLIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "ctlib/transpose.h"

namespace ctlib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;

enum class DType : int {
  kFloat32 = kCtlibFloat32,
  kFloat16 = kCtlibFloat16,
  kBFloat16 = kCtlibBFloat16,
};

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace ctlib

#define CTLIB_ERROR(what) ::ctlib::raise_error(__FILE__, __LINE__, (what))

#define CTLIB_CHECK(cond, what)     \
  do {                              \
    if (!(cond)) CTLIB_ERROR(what); \
  } while (false)

#define CTLIB_CHECK_CUDA(expr)                                            \
  do {                                                                    \
    const cudaError_t status_ = (expr);                                   \
    if (status_ != cudaSuccess) CTLIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

#define CTLIB_TYPE_SWITCH(dtype, type, ...)                           \
  switch (static_cast<::ctlib::DType>(dtype)) {                       \
    case ::ctlib::DType::kFloat32: {                                  \
      using type = ::ctlib::fp32;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::ctlib::DType::kFloat16: {                                  \
      using type = ::ctlib::fp16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::ctlib::DType::kBFloat16: {                                 \
      using type = ::ctlib::bf16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      CTLIB_ERROR("dtype not supported: " + std::to_string(dtype));   \
  }

#endif  // CTLIB_COMMON_H_
