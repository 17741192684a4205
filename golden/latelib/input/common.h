// latelib's host-side common header: dtypes, aliases, errors and the dtype switch.
#ifndef LATELIB_COMMON_H_
#define LATELIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "latelib/ops.h"

namespace latelib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;

enum class DType : int {
  kFloat32 = kLatelibFloat32,
  kFloat16 = kLatelibFloat16,
  kBFloat16 = kLatelibBFloat16,
};

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace latelib

#define LATELIB_ERROR(what) ::latelib::raise_error(__FILE__, __LINE__, (what))

#define LATELIB_CHECK(cond, what)     \
  do {                              \
    if (!(cond)) LATELIB_ERROR(what); \
  } while (false)

#define LATELIB_CHECK_CUDA(expr)                                            \
  do {                                                                    \
    const cudaError_t status_ = (expr);                                   \
    if (status_ != cudaSuccess) LATELIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

#define LATELIB_TYPE_SWITCH(dtype, type, ...)                           \
  switch (static_cast<::latelib::DType>(dtype)) {                       \
    case ::latelib::DType::kFloat32: {                                  \
      using type = ::latelib::fp32;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::latelib::DType::kFloat16: {                                  \
      using type = ::latelib::fp16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::latelib::DType::kBFloat16: {                                 \
      using type = ::latelib::bf16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      LATELIB_ERROR("dtype not supported: " + std::to_string(dtype));   \
  }

#endif  // LATELIB_COMMON_H_
