// Entry points of latelib. The unit reaches util/pointwise.cuh (through dequant.cuh) before
// blocks.cuh: what those two headers declare comes after the element-wise launcher.
#include "../common.h"
#include "dequant.cuh"
#include "blocks.cuh"
#include "latelib/ops.h"

extern "C" void latelib_relu(const LatelibTensor *in, LatelibTensor *out, cudaStream_t stream) {
  latelib::launch_pointwise<latelib::Empty, latelib::relu>(in, out, latelib::Empty{}, stream);
}

extern "C" void latelib_dequantize(const LatelibTensor *in, float scale, LatelibTensor *out, cudaStream_t stream) {
  latelib::quant::dequantize(in, scale, out, stream);
}

extern "C" void latelib_block_scale_half(const LatelibTensor *in, const float *scales, float *out,
                                         cudaStream_t stream) {
  latelib::quant::block_scale<1>(in, scales, out, stream);
}

extern "C" void latelib_block_scale_quarter(const LatelibTensor *in, const float *scales, float *out,
                                            cudaStream_t stream) {
  latelib::quant::block_scale<2>(in, scales, out, stream);
}
