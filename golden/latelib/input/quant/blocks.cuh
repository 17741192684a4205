// Block scaling: a kernel whose parameter type (ScaleBlock) and template argument (Rounding) are
// declared in this header, which a unit includes after the element-wise one (TE's 4over6 Config).
#ifndef LATELIB_QUANT_BLOCKS_CUH_
#define LATELIB_QUANT_BLOCKS_CUH_

#include "../common.h"

namespace latelib {
namespace quant {

constexpr int kBlock = 64;

// The scales of a tensor, one per block of kBlock elements.
struct ScaleBlock {
  const float *scales;
  size_t blocks;
};

// Results are rounded to multiples of 1/2^kShift.
template <int kShift>
struct Rounding {
  static constexpr float step = 1.0f / (1 << kShift);
};

template <typename Cfg, typename IType>
__global__ void block_scale_kernel(const IType *in, ScaleBlock blocks, float *out, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n || i / kBlock >= blocks.blocks) return;
  const float x = static_cast<float>(in[i]) * blocks.scales[i / kBlock];
  out[i] = rintf(x / Cfg::step) * Cfg::step;
}

template <int SHIFT>
void block_scale(const LatelibTensor *in, const float *scales, float *out, cudaStream_t stream) {
  const ScaleBlock blocks{scales, (in->size + kBlock - 1) / kBlock};
  LATELIB_TYPE_SWITCH(in->dtype, IType, {
    block_scale_kernel<Rounding<SHIFT>, IType><<<static_cast<unsigned>((in->size + 255) / 256), 256, 0, stream>>>(
        static_cast<const IType *>(in->data), blocks, out, in->size);
  });
  LATELIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace quant
}  // namespace latelib

#endif  // LATELIB_QUANT_BLOCKS_CUH_
