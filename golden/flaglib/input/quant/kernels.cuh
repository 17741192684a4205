// The scaling and absolute-maximum kernels: flags and a rounding mode select what their bodies
// do, as template arguments.
#ifndef FLAGLIB_QUANT_KERNELS_CUH_
#define FLAGLIB_QUANT_KERNELS_CUH_

#include "../common.h"

namespace flaglib {

// How the scale kernel rounds.
enum class Rounding : int { kNone = 0, kRint = 1, kTrunc = 2 };

namespace quant {

// out = round(in * scale), saturated to [-448, 448] when kSaturate.
template <typename IType, typename OType, Rounding kRounding, bool kSaturate>
__global__ void scale_kernel(const IType *in, OType *out, float scale, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = static_cast<float>(in[i]) * scale;
  if (kRounding == Rounding::kRint) {
    x = rintf(x);
  } else if (kRounding == Rounding::kTrunc) {
    x = truncf(x);
  }
  if (kSaturate) x = fminf(fmaxf(x, -448.0f), 448.0f);
  out[i] = static_cast<OType>(x);
}

// amax[blockIdx.x] = the block's largest |in| (kAbs) or in (not kAbs), of in * in when kSquare.
template <typename IType, bool kAbs, bool kSquare, unsigned kBlock>
__global__ void __launch_bounds__(kBlock) amax_kernel(const IType *in, float *amax, size_t n) {
  __shared__ float partial[kBlock];
  const size_t i = static_cast<size_t>(blockIdx.x) * kBlock + threadIdx.x;
  float x = i < n ? static_cast<float>(in[i]) : -3.402823466e+38f;  // -FLT_MAX
  if (kSquare && i < n) x = x * x;
  if (kAbs && i < n) x = fabsf(x);
  partial[threadIdx.x] = x;
  __syncthreads();
  for (unsigned s = kBlock / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) amax[blockIdx.x] = partial[0];
}

}  // namespace quant
}  // namespace flaglib

#endif  // FLAGLIB_QUANT_KERNELS_CUH_
