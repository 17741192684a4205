// castlib public C API: small cast/reduce utilities over flat device buffers.
#ifndef CASTLIB_CAST_H_
#define CASTLIB_CAST_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CASTLIB_FLOAT32 = 0,
  CASTLIB_FLOAT16 = 1,
  CASTLIB_BFLOAT16 = 2,
} castlib_dtype;

// A caller-supplied __global__ function taking (in, out, n).
typedef void (*castlib_unary_fn)(const float *in, float *out, size_t n);

void castlib_copy(const void *in, void *out, size_t n, castlib_dtype dtype, cudaStream_t stream);
void castlib_convert(const void *in, castlib_dtype in_dtype, void *out, castlib_dtype out_dtype,
                     size_t n, cudaStream_t stream);
void castlib_negate(const void *in, void *out, size_t n, castlib_dtype dtype, cudaStream_t stream);
void castlib_fill(void *out, size_t n, float value, castlib_dtype dtype, cudaStream_t stream);
void castlib_iota(float *out, size_t n, cudaStream_t stream);
// out[r] = sum_c in[r, c] in fp32.
void castlib_rowsum(const void *in, float *out, size_t rows, size_t cols, castlib_dtype dtype,
                    cudaStream_t stream);
// *out = max |in[i]|.
void castlib_amax_f32(const float *in, size_t n, float *out, cudaStream_t stream);
// Launches `fn` over n elements with castlib's default grid.
void castlib_apply(castlib_unary_fn fn, const float *in, float *out, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CASTLIB_CAST_H_
