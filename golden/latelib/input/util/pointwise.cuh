// The element-wise kernel and its launcher. The headers including this one declare more
// parameters and operations for it (quant/dequant.cuh).
#ifndef LATELIB_UTIL_POINTWISE_CUH_
#define LATELIB_UTIL_POINTWISE_CUH_

#include "../common.h"
#include "math.cuh"

namespace latelib {

constexpr int kThreads = 256;

inline unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

template <typename Param, float (*OP)(float, Param), typename IType, typename OType>
__global__ void pointwise_kernel(const IType *in, OType *out, Param p, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<OType>(OP(static_cast<float>(in[i]), p));
}

template <typename Param, float (*OP)(float, Param)>
void launch_pointwise(const LatelibTensor *in, LatelibTensor *out, Param p, cudaStream_t stream) {
  LATELIB_TYPE_SWITCH(in->dtype, IType, LATELIB_TYPE_SWITCH(out->dtype, OType, {
    pointwise_kernel<Param, OP, IType, OType><<<blocks_for(in->size), kThreads, 0, stream>>>(
        static_cast<const IType *>(in->data), static_cast<OType *>(out->data), p, in->size);
  }));
  LATELIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace latelib

#endif  // LATELIB_UTIL_POINTWISE_CUH_
