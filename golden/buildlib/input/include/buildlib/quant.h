// buildlib: element-wise rounding with a mode of the C API (C API).
#ifndef BUILDLIB_QUANT_H_
#define BUILDLIB_QUANT_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum BuildlibDType { kBuildlibFloat32 = 0, kBuildlibFloat16 = 1, kBuildlibBFloat16 = 2 };

/*! How buildlib_round rounds. */
enum BuildlibRounding {
  kBuildlibRoundNone = 0,  /*!< not rounded */
  kBuildlibRoundRint = 1,  /*!< to nearest, ties to even */
  kBuildlibRoundTrunc = 2, /*!< toward zero */
};

typedef struct {
  void *data;
  size_t size;
  int dtype;  // BuildlibDType
} BuildlibTensor;

// out = round(in / BUILDLIB_NUM_PASSES) * BUILDLIB_NUM_PASSES, rounding a BuildlibRounding (not None).
void buildlib_round(const BuildlibTensor *in, BuildlibTensor *out, int rounding, cudaStream_t stream);
// out[r] = max |in[32 r + i]| over i < 32 (float out; in->size a multiple of 32).
void buildlib_absmax(const BuildlibTensor *in, BuildlibTensor *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // BUILDLIB_QUANT_H_
