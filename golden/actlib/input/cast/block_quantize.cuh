// 1-D block scaling: one power-of-two scale per 1x32 row block (rowwise output) and/or per 32x1
// column block (columnwise output). Which outputs exist is decided at run time.
#ifndef ACTLIB_CAST_BLOCK_QUANTIZE_CUH_
#define ACTLIB_CAST_BLOCK_QUANTIZE_CUH_

#include <type_traits>

#include "../common.h"
#include "../util/vectorized_pointwise.h"

namespace actlib {

constexpr int kBlockLen = 32;

template <typename OType>
__device__ constexpr float fp8_max() {
  if constexpr (std::is_same_v<OType, fp8e4m3>) {
    return 448.0f;
  } else {
    return 57344.0f;
  }
}

// Biased exponent e (bias 127) of the smallest power of two >= x; 0 encodes 2^-127.
__device__ inline uint8_t exponent_at_least(float x) {
  if (!(x > 0.0f)) return 0;
  int e = 0;
  const float m = frexpf(x, &e);  // x = m * 2^e, m in [0.5, 1)
  int biased = (m == 0.5f ? e - 1 : e) + 127;
  biased = biased < 0 ? 0 : (biased > 254 ? 254 : biased);
  return static_cast<uint8_t>(biased);
}

// One CTA per 32x32 tile, 32 threads; thread t owns tile row t and tile column t.
template <bool IS_DACT, typename Param, float (*OP)(float, const Param &), typename IType,
          typename OType, bool ROWWISE, bool COLWISE>
__global__ void __launch_bounds__(kBlockLen)
    quantize_block_kernel(const IType *in, const IType *act_in, OType *out_row, OType *out_col,
                          uint8_t *scale_row, uint8_t *scale_col, Param p, size_t rows,
                          size_t cols) {
  __shared__ float tile[kBlockLen][kBlockLen + 1];
  const size_t row0 = size_t(blockIdx.y) * kBlockLen;
  const size_t col0 = size_t(blockIdx.x) * kBlockLen;
  const int t = threadIdx.x;
  for (int r = 0; r < kBlockLen; ++r) {
    const size_t i = (row0 + r) * cols + col0 + t;
    const float x = static_cast<float>(in[i]);
    if constexpr (IS_DACT) {
      tile[r][t] = x * OP(static_cast<float>(act_in[i]), p);
    } else {
      tile[r][t] = apply_op<float, Param, OP>(x, p);
    }
  }
  __syncthreads();

  float row_amax = 0.0f, col_amax = 0.0f;
  for (int k = 0; k < kBlockLen; ++k) {
    row_amax = fmaxf(row_amax, fabsf(tile[t][k]));
    col_amax = fmaxf(col_amax, fabsf(tile[k][t]));
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // sm_100 and newer: hardware float -> e8m0 conversion, rounding towards +inf.
  const uint8_t row_exp =
      __nv_cvt_float_to_e8m0(row_amax / fp8_max<OType>(), __NV_SATFINITE, cudaRoundPosInf);
  const uint8_t col_exp =
      __nv_cvt_float_to_e8m0(col_amax / fp8_max<OType>(), __NV_SATFINITE, cudaRoundPosInf);
#else
  const uint8_t row_exp = exponent_at_least(row_amax / fp8_max<OType>());
  const uint8_t col_exp = exponent_at_least(col_amax / fp8_max<OType>());
#endif

  if constexpr (ROWWISE) {
    const float inv = exp2f(127.0f - static_cast<float>(row_exp));
    scale_row[(row0 + t) * (cols / kBlockLen) + blockIdx.x] = row_exp;
    for (int k = 0; k < kBlockLen; ++k) {
      out_row[(row0 + t) * cols + col0 + k] = static_cast<OType>(tile[t][k] * inv);
    }
  }
  if constexpr (COLWISE) {
    const float inv = exp2f(127.0f - static_cast<float>(col_exp));
    scale_col[blockIdx.y * cols + col0 + t] = col_exp;
    for (int k = 0; k < kBlockLen; ++k) {
      out_col[(row0 + k) * cols + col0 + t] = static_cast<OType>(tile[k][t] * inv);
    }
  }
}

template <bool IS_DACT, typename Param, float (*OP)(float, const Param &), typename IType,
          typename OType>
void launch_block_quantize(const Tensor &input, const Tensor *act_input, Tensor &output,
                           const Param &p, cudaStream_t stream) {
  const size_t rows = input.rows, cols = input.cols;
  ACTLIB_CHECK(rows % kBlockLen == 0 && cols % kBlockLen == 0,
               "block scaling needs rows and cols divisible by 32");
  const bool rowwise = output.data != nullptr;
  const bool colwise = output.columnwise_data != nullptr;
  ACTLIB_CHECK(rowwise || colwise, "block-scaled output has no data buffer");
  ACTLIB_CHECK(!rowwise || output.block_scale != nullptr, "rowwise output needs block_scale");
  ACTLIB_CHECK(!colwise || output.columnwise_block_scale != nullptr,
               "columnwise output needs columnwise_block_scale");

  auto kernel = rowwise ? (colwise ? quantize_block_kernel<IS_DACT, Param, OP, IType, OType, true, true>
                                   : quantize_block_kernel<IS_DACT, Param, OP, IType, OType, true, false>)
                        : quantize_block_kernel<IS_DACT, Param, OP, IType, OType, false, true>;
  const dim3 grid(static_cast<unsigned>(cols / kBlockLen), static_cast<unsigned>(rows / kBlockLen));
  const dim3 block(kBlockLen);
  const IType *act = act_input != nullptr ? static_cast<const IType *>(act_input->data) : nullptr;
  kernel<<<grid, block, 0, stream>>>(static_cast<const IType *>(input.data), act,
                                     static_cast<OType *>(output.data),
                                     static_cast<OType *>(output.columnwise_data),
                                     output.block_scale, output.columnwise_block_scale, p, rows,
                                     cols);
  ACTLIB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace actlib

#endif  // ACTLIB_CAST_BLOCK_QUANTIZE_CUH_
