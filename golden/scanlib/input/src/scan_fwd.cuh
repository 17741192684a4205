// scanlib: the forward scan kernel over a traits class, and its launcher: the traits gather the
// tile shape, three runtime flags made constants by SCAN_BOOL_SWITCH, and the two dtypes.
#pragma once

#include <cuda_fp16.h>

#include "scan.h"
#include "static_switch.h"

template <int kNThreads_, int kNItems_, bool kIsEvenLen_, bool kHasZ_, bool kIsVariableB_, typename input_t_,
          typename weight_t_>
struct ScanFwdTraits {
  using input_t = input_t_;
  using weight_t = weight_t_;
  static constexpr int kNThreads = kNThreads_;
  static constexpr int kNItems = kNItems_;
  static constexpr bool kIsEvenLen = kIsEvenLen_;
  static constexpr bool kHasZ = kHasZ_;
  static constexpr bool kIsVariableB = kIsVariableB_;
  static constexpr int kSmemSize = kNThreads * kNItems * static_cast<int>(sizeof(float));
};

template <typename Ktraits>
__global__ __launch_bounds__(Ktraits::kNThreads) void scan_fwd_kernel(ScanParams params) {
  using input_t = typename Ktraits::input_t;
  using weight_t = typename Ktraits::weight_t;
  extern __shared__ float smem[];
  const int row = blockIdx.x * params.dim + blockIdx.y;
  const input_t *u = static_cast<const input_t *>(params.u_ptr) + row * params.seqlen;
  const weight_t *b = static_cast<const weight_t *>(params.b_ptr);
  float *out = static_cast<float *>(params.out_ptr) + row * params.seqlen;
  float carry = 0.f;
  for (int base = 0; base < params.seqlen; base += Ktraits::kNThreads * Ktraits::kNItems) {
    for (int i = 0; i < Ktraits::kNItems; ++i) {
      const int t = base + threadIdx.x * Ktraits::kNItems + i;
      if (!Ktraits::kIsEvenLen && t >= params.seqlen) break;
      float w = static_cast<float>(b[Ktraits::kIsVariableB ? t : 0]);
      carry = carry * w + static_cast<float>(u[t]);
      smem[threadIdx.x * Ktraits::kNItems + i] = carry;
    }
    __syncthreads();
    for (int i = 0; i < Ktraits::kNItems; ++i) {
      const int t = base + threadIdx.x * Ktraits::kNItems + i;
      if (!Ktraits::kIsEvenLen && t >= params.seqlen) break;
      float v = smem[threadIdx.x * Ktraits::kNItems + i];
      if constexpr (Ktraits::kHasZ) v *= static_cast<const float *>(params.z_ptr)[row * params.seqlen + t];
      out[t] = v;
    }
    __syncthreads();
  }
}

template <int kNThreads, int kNItems, typename input_t, typename weight_t>
void scan_fwd_launch(ScanParams &params, cudaStream_t stream) {
  SCAN_BOOL_SWITCH(params.seqlen % (kNThreads * kNItems) == 0, kIsEvenLen, [&] {
    SCAN_BOOL_SWITCH(params.has_z, kHasZ, [&] {
      SCAN_BOOL_SWITCH(params.variable_b, kIsVariableB, [&] {
        using Ktraits = ScanFwdTraits<kNThreads, kNItems, kIsEvenLen, kHasZ, kIsVariableB, input_t, weight_t>;
        constexpr int kSmemSize = Ktraits::kSmemSize;
        dim3 grid(params.batch, params.dim);
        auto kernel = &scan_fwd_kernel<Ktraits>;
        if (kSmemSize >= 48 * 1024) {
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemSize);
        }
        kernel<<<grid, Ktraits::kNThreads, kSmemSize, stream>>>(params);
      });
    });
  });
}

template <typename input_t, typename weight_t>
void scan_fwd_cuda(ScanParams &params, cudaStream_t stream) {
  if (params.seqlen <= 128) {
    scan_fwd_launch<32, 4, input_t, weight_t>(params, stream);
  } else {
    scan_fwd_launch<64, 8, input_t, weight_t>(params, stream);
  }
}
