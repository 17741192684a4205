// actlib public C API: element-wise and gated activations with optional quantized output.
// Every function takes tensor handles (pointers to ActlibTensorDesc) and a CUDA stream.
#ifndef ACTLIB_ACTIVATION_H_
#define ACTLIB_ACTIVATION_H_

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kActlibFloat32 = 0,
  kActlibFloat16 = 1,
  kActlibBFloat16 = 2,
  kActlibFloat8E4M3 = 3,
  kActlibFloat8E5M2 = 4,
} ActlibDType;

typedef enum {
  // One fp32 scale for the whole tensor (also used for unquantized outputs).
  kActlibPerTensorScaling = 0,
  // One power-of-two scale (biased exponent byte) per 1x32 row block and/or 32x1 column block.
  kActlibBlock1DScaling = 1,
} ActlibScalingMode;

// A 2-D tensor view, rows x cols, row-major. Optional pointers may be null.
typedef struct ActlibTensorDesc {
  void *data;                       // rowwise data [rows, cols]
  void *columnwise_data;            // block scaling only: [rows, cols], scaled along columns
  size_t rows;
  size_t cols;
  ActlibDType dtype;
  ActlibScalingMode scaling_mode;
  float *amax;                      // fp32[1], max |x| before scaling
  float *scale;                     // fp32[1], per-tensor scale (fp8 outputs)
  float *scale_inv;                 // fp32[1], written as 1 / scale
  unsigned char *block_scale;       // block scaling: [rows, cols / 32] biased exponents
  unsigned char *columnwise_block_scale;  // block scaling: [rows / 32, cols]
} ActlibTensorDesc;

typedef ActlibTensorDesc *ActlibTensor;

void actlib_gelu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);
void actlib_dgelu(const ActlibTensor grad, const ActlibTensor input, ActlibTensor output,
                  cudaStream_t stream);
void actlib_relu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);
void actlib_drelu(const ActlibTensor grad, const ActlibTensor input, ActlibTensor output,
                  cudaStream_t stream);
void actlib_silu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);

// Gated: input [rows, 2 * cols] = [act | gate], output [rows, cols].
void actlib_swiglu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream);
void actlib_dswiglu(const ActlibTensor grad, const ActlibTensor input, ActlibTensor output,
                    cudaStream_t stream);
void actlib_clamped_swiglu(const ActlibTensor input, ActlibTensor output, float limit, float alpha,
                           cudaStream_t stream);

// output = quantize(grad * dgelu(input)); dbias[j] = sum_i grad[i, j] * dgelu(input[i, j]).
// With workspace->data == NULL only the workspace shape and dtype are filled in.
void actlib_quantize_dbias_dgelu(const ActlibTensor grad, const ActlibTensor input,
                                 ActlibTensor output, ActlibTensor dbias, ActlibTensor workspace,
                                 cudaStream_t stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACTLIB_ACTIVATION_H_
