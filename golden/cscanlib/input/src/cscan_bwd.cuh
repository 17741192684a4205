// cscanlib: the backward kernel over a traits class of the tile, a flag and the weight type
// (float or the framework's complex), and its launcher. Block sums go through cub::BlockReduce of
// the complex type, gradients of shared parameters through the framework's gpuAtomicAdd. This
// file ends without a newline after its last line.
#pragma once

#include <ATen/cuda/Atomic.cuh>
#include <cub/block/block_reduce.cuh>

#include "cscan.h"
#include "cscan_common.h"
#include "static_switch.h"

template <int kNThreads_, bool kIsVariableB_, typename weight_t_>
struct CscanBwdTraits {
  using weight_t = weight_t_;
  static constexpr int kNThreads = kNThreads_;
  static constexpr bool kIsVariableB = kIsVariableB_;
  static constexpr bool kIsComplex = std::is_same_v<weight_t, complex_t>;
  using state_t = typename ScanState<weight_t>::type;
  using BlockReduceT = cub::BlockReduce<weight_t, kNThreads>;
  using BlockReduceFloatT = cub::BlockReduce<float, kNThreads>;
  static constexpr int kSmemSize =
      custom_max({sizeof(typename BlockReduceT::TempStorage), sizeof(typename BlockReduceFloatT::TempStorage)});
};

template <typename Ktraits>
__global__ __launch_bounds__(Ktraits::kNThreads) void cscan_bwd_kernel(CscanParams params) {
  using weight_t = typename Ktraits::weight_t;
  extern __shared__ char smem[];
  auto &reduce = *reinterpret_cast<typename Ktraits::BlockReduceT::TempStorage *>(smem);
  auto &reduce_float = *reinterpret_cast<typename Ktraits::BlockReduceFloatT::TempStorage *>(smem);
  const int row = blockIdx.x * params.dim + blockIdx.y;
  const float *u = static_cast<const float *>(params.u_ptr) + row * params.seqlen;
  const float *dout = static_cast<const float *>(params.dout_ptr) + row * params.seqlen;
  float *du = static_cast<float *>(params.du_ptr) + row * params.seqlen;
  const weight_t a = static_cast<const weight_t *>(params.a_ptr)[blockIdx.y];
  const weight_t *b = static_cast<const weight_t *>(params.b_ptr);
  constexpr float kLog2e = M_LOG2E;
  weight_t da = weight_t(0);
  float dscale = 0.f;
  for (int t = threadIdx.x; t < params.seqlen; t += Ktraits::kNThreads) {
    const weight_t bt = b[Ktraits::kIsVariableB ? t : 0];
    weight_t decay;
    if constexpr (Ktraits::kIsComplex) {
      decay = cexp2f(complex_t(a.real_ * kLog2e, a.imag_) * u[t]);
      du[t] = (decay * conj_of(bt)).real_ * dout[t];
    } else {
      decay = exp2f(a * kLog2e * u[t]);
      du[t] = decay * bt * dout[t];
    }
    da += conj_of(decay) * dout[t];
    dscale += u[t] * dout[t];
  }
  da = typename Ktraits::BlockReduceT(reduce).Sum(da);
  __syncthreads();
  dscale = typename Ktraits::BlockReduceFloatT(reduce_float).Sum(dscale);
  if (threadIdx.x == 0) {
    gpuAtomicAdd(static_cast<weight_t *>(params.da_ptr) + blockIdx.y, da);
    gpuAtomicAdd(static_cast<float *>(params.dscale_ptr), dscale);
  }
}

template <int kNThreads, typename weight_t>
void cscan_bwd_launch(CscanParams &params, cudaStream_t stream) {
  CSCAN_BOOL_SWITCH(params.variable_b, kIsVariableB, [&] {
    using Ktraits = CscanBwdTraits<kNThreads, kIsVariableB, weight_t>;
    constexpr int kSmemSize = Ktraits::kSmemSize;
    dim3 grid(params.batch, params.dim);
    auto kernel = &cscan_bwd_kernel<Ktraits>;
    if (kSmemSize >= 48 * 1024) {
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemSize);
    }
    kernel<<<grid, Ktraits::kNThreads, kSmemSize, stream>>>(params);
  });
}

template <typename weight_t>
void cscan_bwd_cuda(CscanParams &params, cudaStream_t stream) {
  if (params.seqlen <= 128) {
    cscan_bwd_launch<32, weight_t>(params, stream);
  } else {
    cscan_bwd_launch<64, weight_t>(params, stream);
  }
}