// Cast-transpose, optionally fused with gelu's backward: the kernel is defined here, in a named
// namespace, next to its launcher (the layout of TE's transpose/cast_transpose_fusion.cu). The
// launcher sets the kernel's shared-memory carveout on the template-id before each launch, and its
// vector width comes from a per-entry-point flag through namespace-scope constants
// (`DACT ? kLoadBytesDact : kLoadBytes`).
#include "../common.h"
#include "ctlib/transpose.h"

namespace ctlib {
namespace detail {

#include "transpose_name.h"

constexpr int kTransposeThreads = 128;
constexpr size_t kLoadBytes = 8;      // bytes each thread loads
constexpr size_t kLoadBytesDact = 4;  // the fused backward keeps two inputs in registers

__device__ __forceinline__ float dgelu(float x) {
  const float t = tanhf(0.7978845608f * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}

template <int nvec, bool DACT, typename IType, typename OType>
__global__ void __launch_bounds__(kTransposeThreads)
    cast_transpose_kernel(const IType *in, const IType *act_in, OType *out_c, OType *out_t, size_t rows,
                          size_t cols) {
  const size_t first = (static_cast<size_t>(blockIdx.x) * kTransposeThreads + threadIdx.x) * nvec;
#pragma unroll
  for (int i = 0; i < nvec; ++i) {
    const size_t idx = first + i;
    if (idx < rows * cols) {
      float x = static_cast<float>(in[idx]);
      if constexpr (DACT) x *= dgelu(static_cast<float>(act_in[idx]));
      const size_t r = idx / cols, c = idx % cols;
      out_c[idx] = static_cast<OType>(x);
      out_t[c * rows + r] = static_cast<OType>(x);
    }
  }
}

template <bool DACT>
void launch_cast_transpose(const CtlibTensor *in, const CtlibTensor *act_in, CtlibTensor *out_c,
                           CtlibTensor *out_t, cudaStream_t stream) {
  CTLIB_CHECK(in->rows == out_c->rows && in->cols == out_c->cols, kCastTransposeName);
  CTLIB_CHECK(in->rows == out_t->cols && in->cols == out_t->rows, kCastTransposeName);
  const size_t n = in->rows * in->cols;
  if (n == 0) return;
  CTLIB_TYPE_SWITCH(in->dtype, IType, CTLIB_TYPE_SWITCH(out_c->dtype, OType, {
    constexpr size_t load_bytes = DACT ? kLoadBytesDact : kLoadBytes;
    constexpr int nvec = load_bytes / sizeof(IType);
    const unsigned blocks = static_cast<unsigned>((n / nvec + kTransposeThreads) / kTransposeThreads);
    // Statically-compiled kernel: one instantiation per vector width, DACT and type pair.
    CTLIB_CHECK_CUDA(cudaFuncSetAttribute(cast_transpose_kernel<nvec, DACT, IType, OType>,
                                          cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    cast_transpose_kernel<nvec, DACT, IType, OType><<<blocks, kTransposeThreads, 0, stream>>>(
        static_cast<const IType *>(in->data), DACT ? static_cast<const IType *>(act_in->data) : nullptr,
        static_cast<OType *>(out_c->data), static_cast<OType *>(out_t->data), in->rows, in->cols);
  }));
  CTLIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace detail
}  // namespace ctlib

extern "C" void ctlib_cast_transpose(const CtlibTensor *in, CtlibTensor *out_c, CtlibTensor *out_t,
                                     cudaStream_t stream) {
  ctlib::detail::launch_cast_transpose<false>(in, nullptr, out_c, out_t, stream);
}

extern "C" void ctlib_cast_transpose_dgelu(const CtlibTensor *grad, const CtlibTensor *act_in, CtlibTensor *out_c,
                                           CtlibTensor *out_t, cudaStream_t stream) {
  ctlib::detail::launch_cast_transpose<true>(grad, act_in, out_c, out_t, stream);
}
