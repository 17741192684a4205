// Scaled activations and a row amax: the kernels are defined here, in an unnamed namespace, next
// to the host code that launches them (the layout of TE's activation/scaled_activation.cu).
#include <algorithm>

#include "../common.h"
#include "../util/reduce.cuh"
#include "tulib/scaled.h"

namespace tulib {
namespace {

// Threads per block of every kernel below; the launchers size their grids with it.
constexpr int kThreads = 128;

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float relu(float x) { return fmaxf(x, 0.0f); }

using ActFn = float (*)(float);

template <int nvec, typename IType, typename OType, float (*OP)(float)>
__global__ void __launch_bounds__(kThreads) scaled_act_kernel(const IType *in, const float *scale,
                                                              OType *out, size_t rows, size_t cols) {
  const size_t n = rows * cols;
  const size_t first = (static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x) * nvec;
#pragma unroll
  for (int i = 0; i < nvec; ++i) {
    const size_t idx = first + i;
    if (idx < n) {
      const float x = static_cast<float>(in[idx]) * scale[idx / cols];
      out[idx] = static_cast<OType>(OP(x));
    }
  }
}

template <typename IType>
__global__ void __launch_bounds__(kThreads) row_amax_kernel(const IType *in, float *amax, size_t cols) {
  const IType *row = in + static_cast<size_t>(blockIdx.x) * cols;
  float v = 0.0f;
  for (size_t c = threadIdx.x; c < cols; c += kThreads) v = fmaxf(v, fabsf(static_cast<float>(row[c])));
  v = warp_reduce_max(v);
  __shared__ float partial[kThreads / kWarpSize];
  if (threadIdx.x % kWarpSize == 0) partial[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.0f;
    for (int w = 0; w < kThreads / kWarpSize; ++w) m = fmaxf(m, partial[w]);
    amax[blockIdx.x] = m;
  }
}

// Host-only: argument checks stay in this file.
void check_same_shape(const TulibTensor *in, const TulibTensor *out) {
  TULIB_CHECK(in != nullptr && out != nullptr, "null tensor");
  TULIB_CHECK(in->rows == out->rows && in->cols == out->cols, "input/output shapes differ");
}

}  // namespace

template <ActFn OP>
void launch_scaled_act(const TulibTensor *in, const float *scale, TulibTensor *out, cudaStream_t stream) {
  check_same_shape(in, out);
  const size_t n = in->rows * in->cols;
  if (n == 0) return;
  TULIB_TYPE_SWITCH(in->dtype, IType, TULIB_TYPE_SWITCH(out->dtype, OType, {
    constexpr int nvec = 16 / sizeof(IType);  // one 16-byte access per thread
    const bool aligned = n % nvec == 0 && reinterpret_cast<uintptr_t>(in->data) % 16 == 0;
    if (aligned) {
      const unsigned blocks = static_cast<unsigned>((n / nvec + kThreads - 1) / kThreads);
      scaled_act_kernel<nvec, IType, OType, OP><<<blocks, kThreads, 0, stream>>>(
          static_cast<const IType *>(in->data), scale, static_cast<OType *>(out->data), in->rows, in->cols);
    } else {
      const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
      scaled_act_kernel<1, IType, OType, OP><<<blocks, kThreads, 0, stream>>>(
          static_cast<const IType *>(in->data), scale, static_cast<OType *>(out->data), in->rows, in->cols);
    }
  }));
  TULIB_CHECK_CUDA(cudaGetLastError());
}

void launch_row_amax(const TulibTensor *in, float *amax, cudaStream_t stream) {
  if (in->rows == 0) return;
  TULIB_TYPE_SWITCH(in->dtype, IType, {
    row_amax_kernel<IType><<<static_cast<unsigned>(in->rows), kThreads, 0, stream>>>(
        static_cast<const IType *>(in->data), amax, in->cols);
  });
  TULIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace tulib

extern "C" void tulib_scaled_gelu(const TulibTensor *in, const float *scale, TulibTensor *out,
                                  cudaStream_t stream) {
  tulib::launch_scaled_act<tulib::gelu>(in, scale, out, stream);
}

extern "C" void tulib_scaled_relu(const TulibTensor *in, const float *scale, TulibTensor *out,
                                  cudaStream_t stream) {
  tulib::launch_scaled_act<tulib::relu>(in, scale, out, stream);
}

extern "C" void tulib_row_amax(const TulibTensor *in, float *amax, cudaStream_t stream) {
  tulib::launch_row_amax(in, amax, stream);
}
