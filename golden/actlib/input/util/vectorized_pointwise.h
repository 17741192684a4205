// Vectorized element-wise kernels (plain and gated activations, their gradients) and the host
// launchers that choose the aligned or unaligned variant at run time.
#ifndef ACTLIB_UTIL_VECTORIZED_POINTWISE_H_
#define ACTLIB_UTIL_VECTORIZED_POINTWISE_H_

#include <cstdint>
#include <type_traits>

#include "../common.h"
#include "math.h"

namespace actlib {

constexpr int kPointwiseThreads = 256;
constexpr unsigned kMaxGridX = 65535;

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// OP == nullptr means "no activation" (a plain cast).
template <typename ComputeType, typename Param, ComputeType (*OP)(ComputeType, const Param &)>
__device__ inline ComputeType apply_op(ComputeType x, const Param &p) {
  if constexpr (OP == nullptr) {
    return x;
  } else {
    return OP(x, p);
  }
}

// Warp max of |y| folded into *amax. Non-negative floats order like their bit patterns.
__device__ inline void reduce_amax(float local, float *amax) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    local = fmaxf(local, __shfl_xor_sync(0xffffffffu, local, offset));
  }
  if (amax != nullptr && (threadIdx.x & 31) == 0) {
    atomicMax(reinterpret_cast<int *>(amax), __float_as_int(local));
  }
}

__device__ inline void store_scale_inv(float scale, float *scale_inv) {
  if (scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *scale_inv = 1.0f / scale;
}

template <int nvec, bool aligned, typename ComputeType, typename Param,
          ComputeType (*OP)(ComputeType, const Param &), typename InputType, typename OutputType>
__global__ void unary_kernel(const InputType *in, OutputType *out, const ComputeType *scale,
                             ComputeType *amax, ComputeType *scale_inv, Param p, size_t n) {
  const ComputeType s = scale != nullptr ? *scale : 1.0f;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  ComputeType local = 0.0f;
  if constexpr (aligned) {
    using InPack = Pack<InputType, nvec>;
    using OutPack = Pack<OutputType, nvec>;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n / nvec; i += stride) {
      const InPack x = reinterpret_cast<const InPack *>(in)[i];
      OutPack y;
#pragma unroll
      for (int j = 0; j < nvec; ++j) {
        const ComputeType v = apply_op<ComputeType, Param, OP>(static_cast<ComputeType>(x.v[j]), p);
        local = fmaxf(local, fabsf(v));
        y.v[j] = static_cast<OutputType>(v * s);
      }
      reinterpret_cast<OutPack *>(out)[i] = y;
    }
  } else {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      const ComputeType v = apply_op<ComputeType, Param, OP>(static_cast<ComputeType>(in[i]), p);
      local = fmaxf(local, fabsf(v));
      out[i] = static_cast<OutputType>(v * s);
    }
  }
  reduce_amax(local, amax);
  store_scale_inv(s, scale_inv);
}

template <int nvec, bool aligned, typename ComputeType, typename Param,
          ComputeType (*OP)(ComputeType, const Param &), typename InputType, typename OutputType>
__global__ void unary_grad_kernel(const InputType *grad, const InputType *in, OutputType *out,
                                  const ComputeType *scale, ComputeType *amax,
                                  ComputeType *scale_inv, Param p, size_t n) {
  const ComputeType s = scale != nullptr ? *scale : 1.0f;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  ComputeType local = 0.0f;
  if constexpr (aligned) {
    using InPack = Pack<InputType, nvec>;
    using OutPack = Pack<OutputType, nvec>;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n / nvec; i += stride) {
      const InPack g = reinterpret_cast<const InPack *>(grad)[i];
      const InPack x = reinterpret_cast<const InPack *>(in)[i];
      OutPack y;
#pragma unroll
      for (int j = 0; j < nvec; ++j) {
        const ComputeType v =
            static_cast<ComputeType>(g.v[j]) * OP(static_cast<ComputeType>(x.v[j]), p);
        local = fmaxf(local, fabsf(v));
        y.v[j] = static_cast<OutputType>(v * s);
      }
      reinterpret_cast<OutPack *>(out)[i] = y;
    }
  } else {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      const ComputeType v =
          static_cast<ComputeType>(grad[i]) * OP(static_cast<ComputeType>(in[i]), p);
      local = fmaxf(local, fabsf(v));
      out[i] = static_cast<OutputType>(v * s);
    }
  }
  reduce_amax(local, amax);
  store_scale_inv(s, scale_inv);
}

// Gate of a GLU: the identity, or the clamped-and-shifted gate of clamped SwiGLU.
template <typename Param>
__device__ inline float glu_gate(float b, const Param &p) {
  if constexpr (std::is_same_v<Param, ClampParam>) {
    return fminf(fmaxf(b, -p.limit), p.limit) + 1.0f;
  } else {
    return b;
  }
}

template <typename Param>
__device__ inline float glu_dgate(float b, const Param &p) {
  if constexpr (std::is_same_v<Param, ClampParam>) {
    return (b >= -p.limit && b <= p.limit) ? 1.0f : 0.0f;
  } else {
    return 1.0f;
  }
}

// in: [rows, 2 * cols] = [act | gate]; out: [rows, cols].
template <typename ComputeType, typename Param, ComputeType (*ActOP)(ComputeType, const Param &),
          typename IType, typename OType>
__global__ void gated_act_kernel(const IType *in, OType *out, const ComputeType *scale,
                                 ComputeType *amax, ComputeType *scale_inv, Param p, size_t rows,
                                 size_t cols) {
  const ComputeType s = scale != nullptr ? *scale : 1.0f;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  ComputeType local = 0.0f;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * cols; i += stride) {
    const size_t r = i / cols, c = i % cols;
    const ComputeType a = static_cast<ComputeType>(in[r * 2 * cols + c]);
    const ComputeType b = static_cast<ComputeType>(in[r * 2 * cols + cols + c]);
    const ComputeType v = ActOP(a, p) * glu_gate(b, p);
    local = fmaxf(local, fabsf(v));
    out[i] = static_cast<OType>(v * s);
  }
  reduce_amax(local, amax);
  store_scale_inv(s, scale_inv);
}

// grad: [rows, cols]; in and out: [rows, 2 * cols].
template <typename ComputeType, typename Param, ComputeType (*ActOP)(ComputeType, const Param &),
          ComputeType (*DActOP)(ComputeType, const Param &), typename IType, typename OType>
__global__ void dgated_act_kernel(const IType *grad, const IType *in, OType *out,
                                  const ComputeType *scale, ComputeType *amax,
                                  ComputeType *scale_inv, Param p, size_t rows, size_t cols) {
  const ComputeType s = scale != nullptr ? *scale : 1.0f;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  ComputeType local = 0.0f;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * cols; i += stride) {
    const size_t r = i / cols, c = i % cols;
    const ComputeType g = static_cast<ComputeType>(grad[i]);
    const ComputeType a = static_cast<ComputeType>(in[r * 2 * cols + c]);
    const ComputeType b = static_cast<ComputeType>(in[r * 2 * cols + cols + c]);
    const ComputeType da = g * DActOP(a, p) * glu_gate(b, p);
    const ComputeType db = g * ActOP(a, p) * glu_dgate(b, p);
    local = fmaxf(local, fmaxf(fabsf(da), fabsf(db)));
    out[r * 2 * cols + c] = static_cast<OType>(da * s);
    out[r * 2 * cols + cols + c] = static_cast<OType>(db * s);
  }
  reduce_amax(local, amax);
  store_scale_inv(s, scale_inv);
}

inline bool is_aligned(const void *ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

inline dim3 pointwise_grid(size_t work_items) {
  const size_t blocks = (work_items + kPointwiseThreads - 1) / kPointwiseThreads;
  return dim3(static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxGridX ? kMaxGridX : blocks)));
}

template <int nvec, typename Param, fp32 (*OP)(fp32, const Param &), typename IType, typename OType>
void launch_unary(const Tensor &input, Tensor &output, const Param &p, cudaStream_t stream) {
  const size_t n = input.numel();
  const auto *in = static_cast<const IType *>(input.data);
  auto *out = static_cast<OType *>(output.data);
  const dim3 block(kPointwiseThreads);
  const bool aligned = n % nvec == 0 && is_aligned(in, sizeof(IType) * nvec) &&
                       is_aligned(out, sizeof(OType) * nvec);
  if (aligned) {
    const dim3 grid = pointwise_grid(n / nvec);
    unary_kernel<nvec, true, fp32, Param, OP, IType, OType><<<grid, block, 0, stream>>>(
        in, out, output.scale, output.amax, output.scale_inv, p, n);
  } else {
    const dim3 grid = pointwise_grid(n);
    unary_kernel<nvec, false, fp32, Param, OP, IType, OType><<<grid, block, 0, stream>>>(
        in, out, output.scale, output.amax, output.scale_inv, p, n);
  }
  ACTLIB_CHECK_CUDA(cudaGetLastError());
}

template <int nvec, typename Param, fp32 (*OP)(fp32, const Param &), typename IType, typename OType>
void launch_unary_grad(const Tensor &grad, const Tensor &input, Tensor &output, const Param &p,
                       cudaStream_t stream) {
  const size_t n = input.numel();
  const auto *g = static_cast<const IType *>(grad.data);
  const auto *in = static_cast<const IType *>(input.data);
  auto *out = static_cast<OType *>(output.data);
  const dim3 block(kPointwiseThreads);
  const bool aligned = n % nvec == 0 && is_aligned(g, sizeof(IType) * nvec) &&
                       is_aligned(in, sizeof(IType) * nvec) &&
                       is_aligned(out, sizeof(OType) * nvec);
  if (aligned) {
    const dim3 grid = pointwise_grid(n / nvec);
    unary_grad_kernel<nvec, true, fp32, Param, OP, IType, OType><<<grid, block, 0, stream>>>(
        g, in, out, output.scale, output.amax, output.scale_inv, p, n);
  } else {
    const dim3 grid = pointwise_grid(n);
    unary_grad_kernel<nvec, false, fp32, Param, OP, IType, OType><<<grid, block, 0, stream>>>(
        g, in, out, output.scale, output.amax, output.scale_inv, p, n);
  }
  ACTLIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace actlib

#endif  // ACTLIB_UTIL_VECTORIZED_POINTWISE_H_
