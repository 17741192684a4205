// LayerNorm kernels: forward, backward, and the finalize kernel that sums the per-row dgamma/dbeta
// parts. Each CTA handles Ktraits::WARPS_M rows at a time, rows strided over the grid. The traits
// (kernel_traits.h) come from the launchers' units: this header does not include them (as TE's).
#ifndef LAYERLIB_LN_KERNELS_CUH_
#define LAYERLIB_LN_KERNELS_CUH_

#include "../common.h"

namespace layerlib {

// Sum of `v` over the WARPS_N warps of one row (blockDim.x threads), broadcast to all of them.
template <typename compute_t>
__device__ compute_t row_sum(compute_t v, compute_t *smem) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  compute_t *row = smem + threadIdx.y * warps;
  __syncthreads();
  if (lane == 0) row[warp] = v;
  __syncthreads();
  compute_t total = 0;
  for (int w = 0; w < warps; ++w) total += row[w];
  return total;
}

template <typename Ktraits>
__global__ __launch_bounds__(Ktraits::THREADS_PER_CTA) void ln_fwd_kernel(ForwardParams params) {
  using compute_t = typename Ktraits::compute_t;
  using input_t = typename Ktraits::input_t;
  using weight_t = typename Ktraits::weight_t;
  __shared__ compute_t smem[Ktraits::WARPS_M * Ktraits::WARPS_N];
  const input_t *x = static_cast<const input_t *>(params.x);
  const weight_t *gamma = static_cast<const weight_t *>(params.gamma);
  const weight_t *beta = static_cast<const weight_t *>(params.beta);
  input_t *y = static_cast<input_t *>(params.y);
  const int cols = params.cols;
  for (int row0 = blockIdx.x * Ktraits::WARPS_M; row0 < params.rows; row0 += gridDim.x * Ktraits::WARPS_M) {
    const int row = row0 + threadIdx.y;
    const bool active = row < params.rows;
    compute_t sum = 0;
    for (int c = threadIdx.x; active && c < cols; c += blockDim.x) sum += compute_t(x[size_t(row) * cols + c]);
    const compute_t mean = row_sum(sum, smem) / cols;
    compute_t var = 0;
    for (int c = threadIdx.x; active && c < cols; c += blockDim.x) {
      const compute_t d = compute_t(x[size_t(row) * cols + c]) - mean;
      var += d * d;
    }
    const compute_t rs = rsqrtf(row_sum(var, smem) / cols + params.epsilon);
    if (!active) continue;
    if (threadIdx.x == 0) {
      params.mu[row] = mean;
      params.rs[row] = rs;
    }
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      compute_t g = compute_t(gamma[c]);
      if (params.zero_centered_gamma) g += compute_t(1);
      const compute_t v = (compute_t(x[size_t(row) * cols + c]) - mean) * rs * g + compute_t(beta[c]);
      y[size_t(row) * cols + c] = input_t(v);
    }
  }
}

template <typename Ktraits>
__global__ __launch_bounds__(Ktraits::THREADS_PER_CTA) void ln_bwd_kernel(BackwardParams params) {
  using compute_t = typename Ktraits::compute_t;
  using input_t = typename Ktraits::input_t;
  using weight_t = typename Ktraits::weight_t;
  __shared__ compute_t smem[Ktraits::WARPS_M * Ktraits::WARPS_N];
  const input_t *x = static_cast<const input_t *>(params.x);
  const input_t *dy = static_cast<const input_t *>(params.dy);
  const weight_t *gamma = static_cast<const weight_t *>(params.gamma);
  input_t *dx = static_cast<input_t *>(params.dx);
  const int cols = params.cols;
  for (int row0 = blockIdx.x * Ktraits::WARPS_M; row0 < params.rows; row0 += gridDim.x * Ktraits::WARPS_M) {
    const int row = row0 + threadIdx.y;
    const bool active = row < params.rows;
    const compute_t mu = active ? params.mu[row] : compute_t(0);
    const compute_t rs = active ? params.rs[row] : compute_t(0);
    compute_t s1 = 0, s2 = 0;
    for (int c = threadIdx.x; active && c < cols; c += blockDim.x) {
      const size_t i = size_t(row) * cols + c;
      const compute_t xhat = (compute_t(x[i]) - mu) * rs;
      const compute_t g = compute_t(gamma[c]) + (params.zero_centered_gamma ? compute_t(1) : compute_t(0));
      const compute_t dyg = compute_t(dy[i]) * g;
      s1 += dyg;
      s2 += dyg * xhat;
    }
    const compute_t m1 = row_sum(s1, smem) / cols;
    const compute_t m2 = row_sum(s2, smem) / cols;
    if (!active) continue;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const size_t i = size_t(row) * cols + c;
      const compute_t xhat = (compute_t(x[i]) - mu) * rs;
      const compute_t g = compute_t(gamma[c]) + (params.zero_centered_gamma ? compute_t(1) : compute_t(0));
      dx[i] = input_t(rs * (compute_t(dy[i]) * g - m1 - xhat * m2));
      params.dgamma_part[i] = compute_t(dy[i]) * xhat;
    }
  }
}

// Column sums of dgamma_part (dgamma) and of dy (dbeta): WARPS_M x THREADS_PER_WARP threads,
// each warp row takes a strided share of the rows.
template <typename weight_t, typename compute_t, uint32_t WARPS_M, uint32_t BYTES_PER_LDG,
          uint32_t THREADS_PER_WARP>
__global__ void ln_bwd_finalize_kernel(BackwardParams params) {
  enum { COLS_PER_THREAD = BYTES_PER_LDG / sizeof(compute_t) };
  __shared__ compute_t sg[WARPS_M][THREADS_PER_WARP * COLS_PER_THREAD];
  __shared__ compute_t sb[WARPS_M][THREADS_PER_WARP * COLS_PER_THREAD];
  const int col0 = blockIdx.x * THREADS_PER_WARP * COLS_PER_THREAD;
  for (int j = 0; j < COLS_PER_THREAD; ++j) {
    const int lc = threadIdx.x * COLS_PER_THREAD + j, c = col0 + lc;
    compute_t g = 0, b = 0;
    for (int r = threadIdx.y; c < params.cols && r < params.rows; r += WARPS_M) {
      const size_t i = size_t(r) * params.cols + c;
      g += params.dgamma_part[i];
      b += compute_t(static_cast<const weight_t *>(params.dy)[i]);
    }
    sg[threadIdx.y][lc] = g;
    sb[threadIdx.y][lc] = b;
  }
  __syncthreads();
  if (threadIdx.y != 0) return;
  for (int j = 0; j < COLS_PER_THREAD; ++j) {
    const int lc = threadIdx.x * COLS_PER_THREAD + j, c = col0 + lc;
    if (c >= params.cols) continue;
    compute_t g = 0, b = 0;
    for (int w = 0; w < WARPS_M; ++w) {
      g += sg[w][lc];
      b += sb[w][lc];
    }
    static_cast<weight_t *>(params.dgamma)[c] = weight_t(g);
    static_cast<weight_t *>(params.dbeta)[c] = weight_t(b);
  }
}

}  // namespace layerlib

#endif  // LAYERLIB_LN_KERNELS_CUH_
