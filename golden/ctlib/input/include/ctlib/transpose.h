// ctlib: cast-transpose of a row-major matrix, optionally fused with an activation's backward (C API).
#ifndef CTLIB_TRANSPOSE_H_
#define CTLIB_TRANSPOSE_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum CtlibDType { kCtlibFloat32 = 0, kCtlibFloat16 = 1, kCtlibBFloat16 = 2 };

typedef struct {
  void *data;
  size_t rows;
  size_t cols;
  int dtype;  // CtlibDType
} CtlibTensor;

// out_c = cast(in), out_t = cast(in)^T; in is [rows, cols], out_t [cols, rows].
void ctlib_cast_transpose(const CtlibTensor *in, CtlibTensor *out_c, CtlibTensor *out_t, cudaStream_t stream);
// The same of grad * dgelu(act_in).
void ctlib_cast_transpose_dgelu(const CtlibTensor *grad, const CtlibTensor *act_in, CtlibTensor *out_c,
                                CtlibTensor *out_t, cudaStream_t stream);
// y = scale * x through a plan: an execution graph (use_graph) or a kernel.
void ctlib_scale(const float *x, float *y, size_t n, float scale, int use_graph, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // CTLIB_TRANSPOSE_H_
