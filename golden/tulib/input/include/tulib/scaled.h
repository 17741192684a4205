// tulib: scaled activations on row-major tensors (C API).
#ifndef TULIB_SCALED_H_
#define TULIB_SCALED_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum TulibDType { kTulibFloat32 = 0, kTulibFloat16 = 1, kTulibBFloat16 = 2 };

typedef struct {
  void *data;
  size_t rows;
  size_t cols;
  int dtype;  // TulibDType
} TulibTensor;

// out = act(in * scale[row]) for act in {gelu, relu}.
void tulib_scaled_gelu(const TulibTensor *in, const float *scale, TulibTensor *out, cudaStream_t stream);
void tulib_scaled_relu(const TulibTensor *in, const float *scale, TulibTensor *out, cudaStream_t stream);
// amax[row] = max |in[row, :]|.
void tulib_row_amax(const TulibTensor *in, float *amax, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // TULIB_SCALED_H_
