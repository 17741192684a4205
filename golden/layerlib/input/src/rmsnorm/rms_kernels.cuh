// RMSNorm forward kernel; FUSED_ADD adds a residual after the scale (a defaulted parameter: the
// plain launchers leave it out). The residual's storage slot has a padding that can be zero-length.
#ifndef LAYERLIB_RMS_KERNELS_CUH_
#define LAYERLIB_RMS_KERNELS_CUH_

#include "../layernorm/ln_kernels.cuh"

namespace layerlib {

struct no_add_t {};
template <typename T, bool Enabled>
struct add_type {
  using type = no_add_t;
};
template <typename T>
struct add_type<T, true> {
  using type = T;
};

// The value to store and the residual share storage, the residual at the tail: its leading padding
// is zero-length when both have the same size (nvcc accepts that as a GNU extension).
template <typename Value, typename Add, bool FusedAdd>
union value_add_t {
  using add_t = typename add_type<Add, FusedAdd>::type;
  using value_t = Value;
  struct {
    char _padding[sizeof(value_t) > sizeof(add_t) ? sizeof(value_t) - sizeof(add_t) : 0];
    add_t add;
  };
  value_t value;
};

template <typename Ktraits, bool FUSED_ADD = false>
__global__ __launch_bounds__(Ktraits::THREADS_PER_CTA) void rmsnorm_fwd_kernel(ForwardParams params) {
  using compute_t = typename Ktraits::compute_t;
  using input_t = typename Ktraits::input_t;
  using weight_t = typename Ktraits::weight_t;
  __shared__ compute_t smem[Ktraits::WARPS_M * Ktraits::WARPS_N];
  const input_t *x = static_cast<const input_t *>(params.x);
  const weight_t *gamma = static_cast<const weight_t *>(params.gamma);
  input_t *y = static_cast<input_t *>(params.y);
  const int cols = params.cols;
  for (int row0 = blockIdx.x * Ktraits::WARPS_M; row0 < params.rows; row0 += gridDim.x * Ktraits::WARPS_M) {
    const int row = row0 + threadIdx.y;
    const bool active = row < params.rows;
    compute_t sq = 0;
    for (int c = threadIdx.x; active && c < cols; c += blockDim.x) {
      const compute_t v = compute_t(x[size_t(row) * cols + c]);
      sq += v * v;
    }
    const compute_t rs = rsqrtf(row_sum(sq, smem) / cols + params.epsilon);
    if (!active) continue;
    if (threadIdx.x == 0) params.rs[row] = rs;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      compute_t g = compute_t(gamma[c]);
      if (params.zero_centered_gamma) g += compute_t(1);
      compute_t v = compute_t(x[size_t(row) * cols + c]) * rs * g;
      value_add_t<compute_t, input_t, FUSED_ADD> slot;
      slot.value = v;
      if constexpr (FUSED_ADD) slot.value += compute_t(static_cast<const input_t *>(params.add)[size_t(row) * cols + c]);
      y[size_t(row) * cols + c] = input_t(slot.value);
    }
  }
}

}  // namespace layerlib

#endif  // LAYERLIB_RMS_KERNELS_CUH_
