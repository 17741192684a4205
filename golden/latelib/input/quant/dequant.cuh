// Dequantization through the element-wise kernel: its parameter and operation are declared here,
// after util/pointwise.cuh (TE's cast/fp8 DequantizeParam and dequantize_func).
#ifndef LATELIB_QUANT_DEQUANT_CUH_
#define LATELIB_QUANT_DEQUANT_CUH_

#include "../util/pointwise.cuh"

namespace latelib {
namespace quant {

struct DequantParam {
  float scale;
};

__device__ inline float dequant(float x, DequantParam p) { return x * p.scale; }

inline void dequantize(const LatelibTensor *in, float scale, LatelibTensor *out, cudaStream_t stream) {
  launch_pointwise<DequantParam, dequant>(in, out, DequantParam{scale}, stream);
}

}  // namespace quant
}  // namespace latelib

#endif  // LATELIB_QUANT_DEQUANT_CUH_
