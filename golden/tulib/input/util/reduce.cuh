// Warp reductions shared by tulib's kernels (device code only).
#ifndef TULIB_UTIL_REDUCE_CUH_
#define TULIB_UTIL_REDUCE_CUH_

namespace tulib {

constexpr int kWarpSize = 32;

__device__ __forceinline__ float warp_reduce_max(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

}  // namespace tulib

#endif  // TULIB_UTIL_REDUCE_CUH_
