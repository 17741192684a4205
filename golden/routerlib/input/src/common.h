// routerlib internals: the dtype switch and the occupancy helper shared by the launchers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "routerlib/router.h"

#define ROUTERLIB_TYPE_SWITCH(dtype, type, ...) \
  switch (dtype) {                              \
    case ROUTERLIB_FLOAT32: {                   \
      using type = float;                       \
      { __VA_ARGS__ }                           \
    } break;                                    \
    case ROUTERLIB_FLOAT16: {                   \
      using type = __half;                      \
      { __VA_ARGS__ }                           \
    } break;                                    \
    case ROUTERLIB_BFLOAT16: {                  \
      using type = __nv_bfloat16;               \
      { __VA_ARGS__ }                           \
    } break;                                    \
    default:                                    \
      break;                                    \
  }

namespace routerlib {

constexpr int kThreads = 128;

// How many blocks stay resident: the grid of a persistent kernel. The kernel comes in as a
// template parameter (a generic lambda's `auto kernel`).
template <typename KernelFunc>
inline size_t persistent_grid(KernelFunc kernel_func, int block_size, size_t shmem_bytes,
                              size_t total_blocks) {
  int blocks_per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel_func, block_size,
                                                shmem_bytes);
  int device = 0;
  int sms = 1;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  size_t resident = static_cast<size_t>(sms) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
  return total_blocks < resident ? total_blocks : resident;
}

}  // namespace routerlib
