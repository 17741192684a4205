// flaglib's host-side common header: dtypes, aliases, errors, the dtype switch and the switches
// that make a flag or a rounding mode a constant.
#ifndef FLAGLIB_COMMON_H_
#define FLAGLIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "flaglib/quant.h"

namespace flaglib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;

enum class DType : int {
  kFloat32 = kFlaglibFloat32,
  kFloat16 = kFlaglibFloat16,
  kBFloat16 = kFlaglibBFloat16,
};

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace flaglib

#define FLAGLIB_ERROR(what) ::flaglib::raise_error(__FILE__, __LINE__, (what))

#define FLAGLIB_CHECK(cond, what)     \
  do {                              \
    if (!(cond)) FLAGLIB_ERROR(what); \
  } while (false)

#define FLAGLIB_CHECK_CUDA(expr)                                            \
  do {                                                                    \
    const cudaError_t status_ = (expr);                                   \
    if (status_ != cudaSuccess) FLAGLIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

#define FLAGLIB_TYPE_SWITCH(dtype, type, ...)                           \
  switch (static_cast<::flaglib::DType>(dtype)) {                       \
    case ::flaglib::DType::kFloat32: {                                  \
      using type = ::flaglib::fp32;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::flaglib::DType::kFloat16: {                                  \
      using type = ::flaglib::fp16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case ::flaglib::DType::kBFloat16: {                                 \
      using type = ::flaglib::bf16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      FLAGLIB_ERROR("dtype not supported: " + std::to_string(dtype));   \
  }

// A condition as the constant FLAG in the arms.
#define FLAGLIB_BOOL_SWITCH(cond, FLAG, ...) \
  if (cond) {                                \
    constexpr bool FLAG = true;              \
    { __VA_ARGS__ }                          \
  } else {                                   \
    constexpr bool FLAG = false;             \
    { __VA_ARGS__ }                          \
  }

// A rounding mode (::flaglib::Rounding, quant/kernels.cuh) as the constant MODE in the arms; any
// other value is an error.
#define FLAGLIB_ROUNDING_SWITCH(rounding, MODE, ...)                          \
  switch (rounding) {                                                         \
    case ::flaglib::Rounding::kNone: {                                        \
      constexpr ::flaglib::Rounding MODE = ::flaglib::Rounding::kNone;        \
      { __VA_ARGS__ }                                                         \
    } break;                                                                  \
    case ::flaglib::Rounding::kRint: {                                        \
      constexpr ::flaglib::Rounding MODE = ::flaglib::Rounding::kRint;        \
      { __VA_ARGS__ }                                                         \
    } break;                                                                  \
    case ::flaglib::Rounding::kTrunc: {                                       \
      constexpr ::flaglib::Rounding MODE = ::flaglib::Rounding::kTrunc;       \
      { __VA_ARGS__ }                                                         \
    } break;                                                                  \
    default:                                                                  \
      FLAGLIB_ERROR("rounding mode not supported: " +                         \
                    std::to_string(static_cast<int>(rounding)));              \
  }

#endif  // FLAGLIB_COMMON_H_
