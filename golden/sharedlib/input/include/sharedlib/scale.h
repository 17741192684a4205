// sharedlib C API: scales the groups of a flat buffer, each by its own factor.
#ifndef SHAREDLIB_SCALE_H_
#define SHAREDLIB_SCALE_H_

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SHAREDLIB_FLOAT32 = 0, SHAREDLIB_FLOAT16 = 1, SHAREDLIB_BFLOAT16 = 2 } sharedlib_dtype;

// out[g * n + i] = in[g * n + i] * f(scales[g]) for g < groups (at most 64) and i < n, where f is
// the identity, or the square when `squared` is not 0. `scales` is device memory.
void sharedlib_group_scale(const void *in, void *out, const float *scales, int groups, int n,
                           sharedlib_dtype dtype, int squared, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // SHAREDLIB_SCALE_H_
