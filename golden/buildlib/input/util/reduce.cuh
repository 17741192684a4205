// Block reductions the kernels of quant/ use; quant/kernels.cuh does not include this header: its
// includers (quant/quant.cu) include it first.
#ifndef BUILDLIB_UTIL_REDUCE_CUH_
#define BUILDLIB_UTIL_REDUCE_CUH_

namespace buildlib {
namespace reduce {

// The maximum of `x` over a warp.
__device__ inline float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

}  // namespace reduce
}  // namespace buildlib

#endif  // BUILDLIB_UTIL_REDUCE_CUH_
