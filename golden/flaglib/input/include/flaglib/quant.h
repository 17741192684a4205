// flaglib: element-wise scaling with a rounding mode, and a blockwise absolute maximum (C API).
#ifndef FLAGLIB_QUANT_H_
#define FLAGLIB_QUANT_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum FlaglibDType { kFlaglibFloat32 = 0, kFlaglibFloat16 = 1, kFlaglibBFloat16 = 2 };

typedef struct {
  void *data;
  size_t size;
  int dtype;  // FlaglibDType
} FlaglibTensor;

// out = round(in * scale): rounding 0 none, 1 rint, 2 trunc; saturated to [-448, 448] if saturate.
void flaglib_scale(const FlaglibTensor *in, FlaglibTensor *out, float scale, int rounding, int saturate,
                   cudaStream_t stream);
// amax[b] = the largest value (|value| if use_abs) of in (in * in if square) in block b.
void flaglib_amax(const FlaglibTensor *in, float *amax, int use_abs, int square, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // FLAGLIB_QUANT_H_
