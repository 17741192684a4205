// Internal types of actlib: dtype and scaling-mode enums, the Tensor view, error helpers and the
// dtype switch macros that turn a runtime dtype into a compile-time type alias.
#ifndef ACTLIB_COMMON_H_
#define ACTLIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "actlib/activation.h"

namespace actlib {

using fp32 = float;
using fp16 = half;
using bf16 = __nv_bfloat16;
using fp8e4m3 = __nv_fp8_e4m3;
using fp8e5m2 = __nv_fp8_e5m2;

enum class DType : int {
  kFloat32 = kActlibFloat32,
  kFloat16 = kActlibFloat16,
  kBFloat16 = kActlibBFloat16,
  kFloat8E4M3 = kActlibFloat8E4M3,
  kFloat8E5M2 = kActlibFloat8E5M2,
};

enum class ScalingMode : int {
  kPerTensor = kActlibPerTensorScaling,
  kBlock1D = kActlibBlock1DScaling,
};

inline const char *dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat8E4M3: return "float8_e4m3";
    case DType::kFloat8E5M2: return "float8_e5m2";
  }
  return "unknown";
}

inline bool is_fp8(DType t) { return t == DType::kFloat8E4M3 || t == DType::kFloat8E5M2; }

[[noreturn]] inline void raise_error(const char *file, int line, const std::string &what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

#define ACTLIB_ERROR(what) ::actlib::raise_error(__FILE__, __LINE__, (what))

#define ACTLIB_CHECK(cond, what)      \
  do {                                \
    if (!(cond)) ACTLIB_ERROR(what);  \
  } while (false)

#define ACTLIB_CHECK_CUDA(expr)                                          \
  do {                                                                   \
    const cudaError_t status_ = (expr);                                  \
    if (status_ != cudaSuccess) ACTLIB_ERROR(cudaGetErrorString(status_)); \
  } while (false)

// Internal, typed view of an ActlibTensorDesc. `desc` is kept for outputs the callee fills in.
struct Tensor {
  void *data = nullptr;
  void *columnwise_data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  DType dtype = DType::kFloat32;
  ScalingMode scaling_mode = ScalingMode::kPerTensor;
  float *amax = nullptr;
  float *scale = nullptr;
  float *scale_inv = nullptr;
  uint8_t *block_scale = nullptr;
  uint8_t *columnwise_block_scale = nullptr;
  ActlibTensorDesc *desc = nullptr;

  size_t numel() const { return rows * cols; }
};

inline Tensor view(ActlibTensor h) {
  ACTLIB_CHECK(h != nullptr, "null tensor handle");
  Tensor t;
  t.data = h->data;
  t.columnwise_data = h->columnwise_data;
  t.rows = h->rows;
  t.cols = h->cols;
  t.dtype = static_cast<DType>(h->dtype);
  t.scaling_mode = static_cast<ScalingMode>(h->scaling_mode);
  t.amax = h->amax;
  t.scale = h->scale;
  t.scale_inv = h->scale_inv;
  t.block_scale = h->block_scale;
  t.columnwise_block_scale = h->columnwise_block_scale;
  t.desc = h;
  return t;
}

}  // namespace actlib

// Each switch below binds `type` to the C++ type of a runtime dtype and runs the statements given
// as the remaining macro arguments once per supported case.

#define ACTLIB_TYPE_SWITCH_INPUT(dtype, type, ...)                                      \
  switch (dtype) {                                                                    \
    case ::actlib::DType::kFloat32: {                                                 \
      using type = ::actlib::fp32;                                                    \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kFloat16: {                                                 \
      using type = ::actlib::fp16;                                                    \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kBFloat16: {                                                \
      using type = ::actlib::bf16;                                                    \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    default:                                                                          \
      ACTLIB_ERROR(std::string("input dtype not supported: ") +                       \
                   ::actlib::dtype_name(dtype));                                      \
  }

#define ACTLIB_TYPE_SWITCH_OUTPUT(dtype, type, ...)                                     \
  switch (dtype) {                                                                    \
    case ::actlib::DType::kFloat32: {                                                 \
      using type = ::actlib::fp32;                                                    \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kFloat16: {                                                 \
      using type = ::actlib::fp16;                                                    \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kBFloat16: {                                                \
      using type = ::actlib::bf16;                                                    \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kFloat8E4M3: {                                              \
      using type = ::actlib::fp8e4m3;                                                 \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kFloat8E5M2: {                                              \
      using type = ::actlib::fp8e5m2;                                                 \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    default:                                                                          \
      ACTLIB_ERROR(std::string("output dtype not supported: ") +                      \
                   ::actlib::dtype_name(dtype));                                      \
  }

#define ACTLIB_TYPE_SWITCH_FP8ONLY(dtype, type, ...)                                    \
  switch (dtype) {                                                                    \
    case ::actlib::DType::kFloat8E4M3: {                                              \
      using type = ::actlib::fp8e4m3;                                                 \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    case ::actlib::DType::kFloat8E5M2: {                                              \
      using type = ::actlib::fp8e5m2;                                                 \
      { __VA_ARGS__ }                                                                 \
    } break;                                                                          \
    default:                                                                          \
      ACTLIB_ERROR(std::string("an fp8 dtype is required here, got ") +               \
                   ::actlib::dtype_name(dtype));                                      \
  }

#endif  // ACTLIB_COMMON_H_
