// scopelib: element-wise scaling with a rounding mode (C API).
#ifndef SCOPELIB_QUANT_H_
#define SCOPELIB_QUANT_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ScopelibDType { kScopelibFloat32 = 0, kScopelibFloat16 = 1, kScopelibBFloat16 = 2 };

typedef struct {
  void *data;
  size_t size;
  int dtype;  // ScopelibDType
} ScopelibTensor;

// out = round(in), saturated to [-448, 448]; rint or trunc.
void scopelib_round_rint(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream);
void scopelib_round_trunc(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream);
// out = in * in, not rounded, not saturated.
void scopelib_square(const ScopelibTensor *in, ScopelibTensor *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // SCOPELIB_QUANT_H_
