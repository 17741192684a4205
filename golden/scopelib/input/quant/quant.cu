// Entry points of scopelib. The kernel's template arguments are spelled relative to the
// namespace of the function that spells them: `inner::Config<...>` and `detail::identity` in
// `scopelib::quant::fp`, where the kernel is launched; `fp::inner::Config<...>` and
// `fp::detail::square` in `scopelib::quant::sq`, passed to a launcher of `scopelib`.
#include "../common.h"
#include "kernels.cuh"
#include "scopelib/quant.h"

namespace scopelib {

constexpr int kThreads = 256;

inline unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

namespace quant {
namespace fp {

template <int ROUNDING>
void round(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream) {
  using Cfg = inner::Config<ROUNDING, true>;
  SCOPELIB_TYPE_SWITCH(in->dtype, IType, SCOPELIB_TYPE_SWITCH(out->dtype, OType, {
    scale_kernel<Cfg, detail::identity, IType, OType><<<blocks_for(in->size), kThreads, 0, stream>>>(
        static_cast<const IType *>(in->data), static_cast<OType *>(out->data), in->size);
  }));
  SCOPELIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace fp
}  // namespace quant

// A launcher of the outer namespace: its arguments come spelled from another scope.
template <typename Cfg, float (*OP)(float)>
void launch_scale(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream) {
  SCOPELIB_TYPE_SWITCH(in->dtype, IType, SCOPELIB_TYPE_SWITCH(out->dtype, OType, {
    quant::fp::scale_kernel<Cfg, OP, IType, OType><<<blocks_for(in->size), kThreads, 0, stream>>>(
        static_cast<const IType *>(in->data), static_cast<OType *>(out->data), in->size);
  }));
  SCOPELIB_CHECK_CUDA(cudaGetLastError());
}

namespace quant {
namespace sq {

void square(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream) {
  launch_scale<fp::inner::Config<0, false>, fp::detail::square>(in, out, stream);
}

}  // namespace sq
}  // namespace quant
}  // namespace scopelib

extern "C" void scopelib_round_rint(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream) {
  scopelib::quant::fp::round<1>(in, out, stream);
}

extern "C" void scopelib_round_trunc(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream) {
  scopelib::quant::fp::round<2>(in, out, stream);
}

extern "C" void scopelib_square(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream) {
  scopelib::quant::sq::square(in, out, stream);
}
