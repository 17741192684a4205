// Device functions of the element-wise kernels, and their empty parameter.
#ifndef LATELIB_UTIL_MATH_CUH_
#define LATELIB_UTIL_MATH_CUH_

namespace latelib {

struct Empty {};

__device__ inline float relu(float x, Empty) { return fmaxf(x, 0.0f); }

}  // namespace latelib

#endif  // LATELIB_UTIL_MATH_CUH_
