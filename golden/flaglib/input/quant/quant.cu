// Entry points of flaglib. The scale kernel's rounding mode and saturation are runtime values that
// switches make constants for its template arguments, nested as the dtype switches are; the amax
// kernel's kAbs is one too, and its kSquare also sets the block size.
#include "../common.h"
#include "kernels.cuh"
#include "flaglib/quant.h"

namespace flaglib {
namespace quant {

constexpr unsigned kThreads = 256;

inline unsigned blocks_for(size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

void scale(const FlaglibTensor *in, FlaglibTensor *out, float scale, int rounding, bool saturate,
           cudaStream_t stream) {
  const Rounding mode = static_cast<Rounding>(rounding);
  FLAGLIB_TYPE_SWITCH(in->dtype, IType, FLAGLIB_TYPE_SWITCH(out->dtype, OType,
    FLAGLIB_ROUNDING_SWITCH(mode, kRounding,
      FLAGLIB_BOOL_SWITCH(saturate, kSaturate, {
        scale_kernel<IType, OType, kRounding, kSaturate><<<blocks_for(in->size, kThreads), kThreads, 0, stream>>>(
            static_cast<const IType *>(in->data), static_cast<OType *>(out->data), scale, in->size);
      });
    );
  ));
  FLAGLIB_CHECK_CUDA(cudaGetLastError());
}

void amax(const FlaglibTensor *in, float *amax, bool use_abs, bool square, cudaStream_t stream) {
  FLAGLIB_TYPE_SWITCH(in->dtype, IType, {
    FLAGLIB_BOOL_SWITCH(use_abs, kAbs, {
      FLAGLIB_BOOL_SWITCH(square, kSquare, {
        // kSquare is also the block size's: its switch stays
        constexpr unsigned kBlock = kSquare ? 128 : kThreads;
        amax_kernel<IType, kAbs, kSquare, kBlock><<<blocks_for(in->size, kBlock), kBlock, 0, stream>>>(
            static_cast<const IType *>(in->data), amax, in->size);
      });
    });
  });
  FLAGLIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace quant
}  // namespace flaglib

extern "C" void flaglib_scale(const FlaglibTensor *in, FlaglibTensor *out, float scale, int rounding, int saturate,
                              cudaStream_t stream) {
  flaglib::quant::scale(in, out, scale, rounding, saturate != 0, stream);
}

extern "C" void flaglib_amax(const FlaglibTensor *in, float *amax, int use_abs, int square, cudaStream_t stream) {
  flaglib::quant::amax(in, amax, use_abs != 0, square != 0, stream);
}
