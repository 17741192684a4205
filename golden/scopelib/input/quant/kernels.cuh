// The scaling kernel and what its template arguments name: a configuration class template and
// device functions, each in a namespace nested below the one launching the kernel.
#ifndef SCOPELIB_QUANT_KERNELS_CUH_
#define SCOPELIB_QUANT_KERNELS_CUH_

#include "../common.h"

namespace scopelib {
namespace quant {
namespace fp {

namespace inner {

// What the kernel does after OP: the rounding (0 none, 1 rint, 2 trunc) and the saturation.
template <int kRounding, bool kSaturate>
struct Config {
  static constexpr int rounding = kRounding;
  static constexpr bool saturate = kSaturate;
};

}  // namespace inner

namespace detail {

__device__ inline float identity(float x) { return x; }

__device__ inline float square(float x) { return x * x; }

}  // namespace detail

template <typename Cfg, float (*OP)(float), typename IType, typename OType>
__global__ void scale_kernel(const IType *in, OType *out, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = OP(static_cast<float>(in[i]));
  if (Cfg::rounding == 1) {
    x = rintf(x);
  } else if (Cfg::rounding == 2) {
    x = truncf(x);
  }
  if (Cfg::saturate) x = fminf(fmaxf(x, -448.0f), 448.0f);
  out[i] = static_cast<OType>(x);
}

}  // namespace fp
}  // namespace quant
}  // namespace scopelib

#endif  // SCOPELIB_QUANT_KERNELS_CUH_
