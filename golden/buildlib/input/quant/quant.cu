// Entry point of buildlib: the rounding mode comes as a C enum at run time; a switch macro gives
// each case a constexpr of the enum type, spelled into the kernel's configuration type.
#include "../common.h"
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

}  // namespace quant
}  // namespace buildlib

extern "C" void buildlib_round(const BuildlibTensor *in, BuildlibTensor *out, int rounding, cudaStream_t stream) {
  buildlib::quant::round(in, out, rounding, stream);
}
