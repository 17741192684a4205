// The rounding kernel: its configuration takes an enumerator of the C API, and its step is a
// build-time macro used as a template argument.
#ifndef BUILDLIB_QUANT_KERNELS_CUH_
#define BUILDLIB_QUANT_KERNELS_CUH_

#include <buildlib/quant.h>

#include "../common.h"

namespace buildlib {
namespace quant {

template <BuildlibRounding kMode, bool kSaturate>
struct Config {
  static constexpr BuildlibRounding mode = kMode;
  static constexpr bool saturate = kSaturate;
};

// Rounds to a multiple of kStep.
template <int kStep>
struct Grid {
  static_assert(kStep > 0, "the step must be positive");
  template <BuildlibRounding kMode>
  __device__ static float snap(float x) {
    const float q = x / kStep;
    return (kMode == kBuildlibRoundRint ? rintf(q) : truncf(q)) * kStep;
  }
};

template <typename Cfg, typename IType, typename OType>
__global__ void round_kernel(const IType *in, OType *out, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = Grid<BUILDLIB_NUM_PASSES>::template snap<Cfg::mode>(static_cast<float>(in[i]));
  if (Cfg::saturate) x = fminf(fmaxf(x, -448.0f), 448.0f);
  out[i] = static_cast<OType>(x);
}

}  // namespace quant
}  // namespace buildlib

#endif  // BUILDLIB_QUANT_KERNELS_CUH_
