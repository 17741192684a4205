// castlib internals: the dtype switch macro, launch geometry and error checks.
#ifndef CASTLIB_COMMON_H_
#define CASTLIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "castlib/cast.h"

namespace castlib {

constexpr int kThreads = 256;

inline dim3 grid_for(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(blocks == 0 ? 1 : (blocks > 65535 ? 65535 : blocks)));
}

inline void check_cuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

}  // namespace castlib

// Binds `type` to the element type of a castlib_dtype and runs the trailing statements.
#define CASTLIB_TYPE_SWITCH(dtype, type, ...)                         \
  switch (dtype) {                                                    \
    case CASTLIB_FLOAT32: {                                           \
      using type = float;                                             \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case CASTLIB_FLOAT16: {                                           \
      using type = __half;                                            \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    case CASTLIB_BFLOAT16: {                                          \
      using type = __nv_bfloat16;                                     \
      { __VA_ARGS__ }                                                 \
    } break;                                                          \
    default:                                                          \
      throw std::invalid_argument("castlib: unsupported dtype");      \
  }

#endif  // CASTLIB_COMMON_H_
