// latelib: element-wise operations and block scaling (C API).
#ifndef LATELIB_OPS_H_
#define LATELIB_OPS_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum LatelibDType { kLatelibFloat32 = 0, kLatelibFloat16 = 1, kLatelibBFloat16 = 2 };

typedef struct {
  void *data;
  size_t size;
  int dtype;  // LatelibDType
} LatelibTensor;

// out = max(in, 0).
void latelib_relu(const LatelibTensor *in, LatelibTensor *out, cudaStream_t stream);
// out = in * scale.
void latelib_dequantize(const LatelibTensor *in, float scale, LatelibTensor *out, cudaStream_t stream);
// out = in * scale of its block of 64 (float), rounded to 1/2^SHIFT with SHIFT 1 or 2; scales: one
// float per block.
void latelib_block_scale_half(const LatelibTensor *in, const float *scales, float *out, cudaStream_t stream);
void latelib_block_scale_quarter(const LatelibTensor *in, const float *scales, float *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // LATELIB_OPS_H_
