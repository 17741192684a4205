// Entry point of buildlib: the rounding mode comes as a C enum at run time; a switch macro gives
// each case a constexpr of the enum type, spelled into the kernel's configuration type.
#include "../common.h"
#include "../util/reduce.cuh"
#include "buildlib/quant.h"
#include "kernels.cuh"

#define BUILDLIB_ROUNDING_SWITCH(MODE, MODE_CONST, ...)              \
  switch (MODE) {                                                   \
    case kBuildlibRoundRint: {                                      \
      constexpr BuildlibRounding MODE_CONST = kBuildlibRoundRint;   \
      { __VA_ARGS__ }                                               \
    } break;                                                        \
    case kBuildlibRoundTrunc: {                                     \
      constexpr BuildlibRounding MODE_CONST = kBuildlibRoundTrunc;  \
      { __VA_ARGS__ }                                               \
    } break;                                                        \
    default:                                                        \
      BUILDLIB_ERROR("rounding not supported: " + std::to_string(MODE)); \
  }

namespace buildlib {

constexpr int kThreads = 256;

inline unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

namespace quant {

void round(const BuildlibTensor *in, BuildlibTensor *out, int rounding, cudaStream_t stream) {
  BUILDLIB_ROUNDING_SWITCH(rounding, kMode, {
    using Cfg = Config<kMode, true>;
    BUILDLIB_TYPE_SWITCH(in->dtype, IType, BUILDLIB_TYPE_SWITCH(out->dtype, OType, {
      round_kernel<Cfg, IType, OType><<<blocks_for(in->size), kThreads, 0, stream>>>(
          static_cast<const IType *>(in->data), static_cast<OType *>(out->data), in->size);
    }));
  });
  BUILDLIB_CHECK_CUDA(cudaGetLastError());
}

void absmax(const BuildlibTensor *in, BuildlibTensor *out, cudaStream_t stream) {
  constexpr int kWarps = 4;
  const size_t rows = in->size / 32;
  BUILDLIB_TYPE_SWITCH(in->dtype, IType, {
    absmax_kernel<IType, kWarps><<<static_cast<unsigned>((rows + kWarps - 1) / kWarps), kWarps * 32, 0, stream>>>(
        static_cast<const IType *>(in->data), static_cast<float *>(out->data), rows);
  });
  BUILDLIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace quant
}  // namespace buildlib

extern "C" void buildlib_round(const BuildlibTensor *in, BuildlibTensor *out, int rounding, cudaStream_t stream) {
  buildlib::quant::round(in, out, rounding, stream);
}

extern "C" void buildlib_absmax(const BuildlibTensor *in, BuildlibTensor *out, cudaStream_t stream) {
  buildlib::quant::absmax(in, out, stream);
}
