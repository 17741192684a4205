// tulib's host-side common header: dtypes, aliases, errors and the dtype switch.
#ifndef TULIB_COMMON_H_
#define TULIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "tulib/scaled.h"

namespace tulib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;

enum class DType : int {
  kFloat32 = kTulibFloat32,
  kFloat16 = kTulibFloat16,
  kBFloat16 = kTulibBFloat16,
};

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace tulib

#define TULIB_ERROR(what) ::tulib::raise_error(__FILE__, __LINE__, (what))

#define TULIB_CHECK(cond, what)     \
  do {                              \
    if (!(cond)) TULIB_ERROR(what); \
  } while (false)

#define TULIB_CHECK_CUDA(expr)                                            \
  do {                                                                    \
    const cudaError_t status_ = (expr);                                   \
    if (status_ != cudaSuccess) TULIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

#define TULIB_TYPE_SWITCH(dtype, type, ...)                           \
  switch (static_cast<::tulib::DType>(dtype)) {                       \
    case ::tulib::DType::kFloat32: {                                  \
      using type = ::tulib::fp32;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::tulib::DType::kFloat16: {                                  \
      using type = ::tulib::fp16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::tulib::DType::kBFloat16: {                                 \
      using type = ::tulib::bf16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      TULIB_ERROR("dtype not supported: " + std::to_string(dtype));   \
  }

#endif  // TULIB_COMMON_H_
