// The rounding kernel: its configuration takes an enumerator of the C API, and its step is a
// build-time macro used as a template argument; a device assert a Release build (NDEBUG) compiles
// out; the row maximum kernel, whose head an `#if` splits.
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
  assert(in != nullptr && out != nullptr);  // common.h includes <cassert>; NVRTC has assert built in
  float x = Grid<BUILDLIB_NUM_PASSES>::template snap<Cfg::mode>(static_cast<float>(in[i]));
  if (Cfg::saturate) x = fminf(fmaxf(x, -448.0f), 448.0f);
  out[i] = static_cast<OType>(x);
}

// The largest |x| of each row of 32 values: one warp a row. Launch bounds only where the device
// code is built for sm_80 and later (an `#if` inside the declarator). Uses reduce::warp_max, which
// this header does not include (util/reduce.cuh: its includers include it first).
template <typename IType, int kWarps>
__global__ void
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
__launch_bounds__(kWarps * 32)
#endif
    absmax_kernel(const IType *in, float *out, size_t rows) {
  const size_t row = static_cast<size_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const float x = fabsf(static_cast<float>(in[row * 32 + threadIdx.x % 32]));
  const float m = reduce::warp_max(x);
  if (threadIdx.x % 32 == 0) out[row] = m;
}

}  // namespace quant
}  // namespace buildlib

#endif  // BUILDLIB_QUANT_KERNELS_CUH_
