// actlib public C API: plain casts/quantization and the runtime-compiled transpose.
#ifndef ACTLIB_CAST_H_
#define ACTLIB_CAST_H_

#include "actlib/activation.h"

#ifdef __cplusplus
extern "C" {
#endif

void actlib_quantize(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);
void actlib_quantize_dbias(const ActlibTensor input, ActlibTensor output, ActlibTensor dbias,
                           ActlibTensor workspace, cudaStream_t stream);

// output = input (FP8) * input.scale_inv, in the output's dtype.
void actlib_dequantize(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);

// output[c, r] = input[r, c]; element bytes are moved unchanged. Compiled with NVRTC on first use.
void actlib_transpose(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACTLIB_CAST_H_
