// layerlib C API: LayerNorm and RMSNorm over a rows x cols matrix, normalized across columns.
#ifndef LAYERLIB_NORM_H_
#define LAYERLIB_NORM_H_

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { LAYERLIB_FLOAT32 = 0, LAYERLIB_FLOAT16 = 1, LAYERLIB_BFLOAT16 = 2 } layerlib_dtype;

// y = (x - mean) * rsigma * gamma + beta; mu and rsigma (float, one per row) are written.
void layerlib_layernorm_fwd(const void *x, const void *gamma, const void *beta, void *y, float *mu,
                           float *rsigma, int rows, int cols, layerlib_dtype wtype,
                           layerlib_dtype itype, float epsilon, cudaStream_t stream);

// dx, dgamma and dbeta from dy; dgamma_part is a rows x cols float workspace.
void layerlib_layernorm_bwd(const void *dy, const void *x, const float *mu, const float *rsigma,
                           const void *gamma, void *dx, void *dgamma, void *dbeta,
                           float *dgamma_part, int rows, int cols, layerlib_dtype wtype,
                           layerlib_dtype itype, cudaStream_t stream);

// y = x * rsigma * gamma (+ add, when add is not null).
void layerlib_rmsnorm_fwd(const void *x, const void *gamma, const void *add, void *y,
                         float *rsigma, int rows, int cols, layerlib_dtype wtype,
                         layerlib_dtype itype, int zero_centered_gamma, float epsilon,
                         cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // LAYERLIB_NORM_H_
