// Dispatchers shared by every activation and cast entry point: pick the path from the output's
// scaling mode, then turn the runtime input/output dtypes into template arguments.
#ifndef ACTLIB_CAST_DISPATCH_CUH_
#define ACTLIB_CAST_DISPATCH_CUH_

#include "../common.h"
#include "../util/math.h"
#include "../util/vectorized_pointwise.h"
#include "block_quantize.cuh"
#include "fp8_quantize.cuh"

namespace actlib {

constexpr int kPointwiseVec = 4;

inline void check_same_shape(const Tensor &a, const Tensor &b, const char *what) {
  ACTLIB_CHECK(a.rows == b.rows && a.cols == b.cols, what);
}

// output = quantize(OP(input)), or quantize(input) when IS_ACT is false (OP must be nullptr then).
template <bool IS_ACT, typename Param, float (*OP)(float, const Param &)>
void quantize_fwd_helper(const ActlibTensor input_handle, ActlibTensor output_handle,
                         const Param *param, cudaStream_t stream) {
  static_assert(IS_ACT == (OP != nullptr), "IS_ACT must match the presence of an op");
  const Tensor input = view(input_handle);
  Tensor output = view(output_handle);
  check_same_shape(input, output, "input and output shapes differ");
  const Param p = param != nullptr ? *param : Param{};

  switch (output.scaling_mode) {
    case ScalingMode::kPerTensor: {
      const bool tiled_fp8 = is_fp8(output.dtype) && input.cols % kTileCols == 0;
      if (tiled_fp8) {
        ACTLIB_TYPE_SWITCH_INPUT(input.dtype, IType,
          ACTLIB_TYPE_SWITCH_FP8ONLY(output.dtype, OType,
            launch_cast_fp8<false, false, Param, OP, IType, OType>(
                input, nullptr, output, nullptr, nullptr, p, stream);););
      } else {
        ACTLIB_TYPE_SWITCH_INPUT(input.dtype, IType,
          ACTLIB_TYPE_SWITCH_OUTPUT(output.dtype, OType,
            launch_unary<kPointwiseVec, Param, OP, IType, OType>(input, output, p, stream);););
      }
      break;
    }
    case ScalingMode::kBlock1D: {
      ACTLIB_TYPE_SWITCH_INPUT(input.dtype, IType,
        ACTLIB_TYPE_SWITCH_FP8ONLY(output.dtype, OType,
          launch_block_quantize<false, Param, OP, IType, OType>(input, nullptr, output, p,
                                                                stream);););
      break;
    }
    default:
      ACTLIB_ERROR("unknown output scaling mode");
  }
}

// output = quantize(grad * OP(act_input)) when IS_DACT, else quantize(grad); with IS_DBIAS also
// dbias = column sums of the unquantized result.
template <bool IS_DBIAS, bool IS_DACT, typename Param, float (*OP)(float, const Param &)>
void quantize_bwd_helper(const ActlibTensor grad_handle, const ActlibTensor act_input_handle,
                         ActlibTensor output_handle, ActlibTensor dbias, ActlibTensor workspace,
                         cudaStream_t stream) {
  static_assert(IS_DBIAS || IS_DACT, "backward helper without dbias or dact");
  static_assert(IS_DACT == (OP != nullptr), "IS_DACT must match the presence of an op");
  const Tensor grad = view(grad_handle);
  Tensor output = view(output_handle);
  check_same_shape(grad, output, "grad and output shapes differ");
  Tensor act_input;
  if constexpr (IS_DACT) {
    act_input = view(act_input_handle);
    check_same_shape(grad, act_input, "grad and input shapes differ");
    ACTLIB_CHECK(act_input.dtype == grad.dtype, "grad and input dtypes differ");
  }
  const Tensor *act = IS_DACT ? &act_input : nullptr;
  const Param p{};

  switch (output.scaling_mode) {
    case ScalingMode::kPerTensor: {
      if constexpr (!IS_DBIAS) {
        const bool tiled_fp8 = is_fp8(output.dtype) && grad.cols % kTileCols == 0;
        if (!tiled_fp8) {
          ACTLIB_TYPE_SWITCH_INPUT(grad.dtype, IType,
            ACTLIB_TYPE_SWITCH_OUTPUT(output.dtype, OType,
              launch_unary_grad<kPointwiseVec, Param, OP, IType, OType>(grad, act_input, output,
                                                                         p, stream);););
          return;
        }
      }
      ACTLIB_TYPE_SWITCH_INPUT(grad.dtype, IType,
        ACTLIB_TYPE_SWITCH_FP8ONLY(output.dtype, OType,
          launch_cast_fp8<IS_DBIAS, IS_DACT, Param, OP, IType, OType>(grad, act, output, dbias,
                                                                      workspace, p, stream);););
      break;
    }
    case ScalingMode::kBlock1D: {
      if constexpr (IS_DBIAS) {
        ACTLIB_ERROR("dbias is not supported with block scaling");
      } else {
        ACTLIB_TYPE_SWITCH_INPUT(grad.dtype, IType,
          ACTLIB_TYPE_SWITCH_FP8ONLY(output.dtype, OType,
            launch_block_quantize<IS_DACT, Param, OP, IType, OType>(grad, act, output, p,
                                                                    stream);););
      }
      break;
    }
    default:
      ACTLIB_ERROR("unknown output scaling mode");
  }
}

// Gated forward: input [rows, 2 * cols] -> output [rows, cols]. Per-tensor outputs only.
template <typename Param, float (*ActOP)(float, const Param &)>
void quantize_gated_fwd_helper(const ActlibTensor input_handle, ActlibTensor output_handle,
                               const Param &p, cudaStream_t stream) {
  const Tensor input = view(input_handle);
  Tensor output = view(output_handle);
  ACTLIB_CHECK(input.rows == output.rows && input.cols == 2 * output.cols,
               "gated input must be [rows, 2 * cols]");
  switch (output.scaling_mode) {
    case ScalingMode::kPerTensor: {
      const dim3 grid = pointwise_grid(output.numel());
      const dim3 block(kPointwiseThreads);
      ACTLIB_TYPE_SWITCH_INPUT(input.dtype, IType,
        ACTLIB_TYPE_SWITCH_OUTPUT(output.dtype, OType,
          gated_act_kernel<fp32, Param, ActOP, IType, OType><<<grid, block, 0, stream>>>(
              static_cast<const IType *>(input.data), static_cast<OType *>(output.data),
              output.scale, output.amax, output.scale_inv, p, output.rows, output.cols);););
      ACTLIB_CHECK_CUDA(cudaGetLastError());
      break;
    }
    default:
      ACTLIB_ERROR("gated activations support per-tensor outputs only");
  }
}

// Gated backward: grad [rows, cols], input and output [rows, 2 * cols].
template <typename Param, float (*ActOP)(float, const Param &),
          float (*DActOP)(float, const Param &)>
void quantize_gated_bwd_helper(const ActlibTensor grad_handle, const ActlibTensor input_handle,
                               ActlibTensor output_handle, const Param &p, cudaStream_t stream) {
  const Tensor grad = view(grad_handle);
  const Tensor input = view(input_handle);
  Tensor output = view(output_handle);
  ACTLIB_CHECK(input.rows == grad.rows && input.cols == 2 * grad.cols,
               "gated input must be [rows, 2 * cols]");
  check_same_shape(input, output, "gated input and output shapes differ");
  ACTLIB_CHECK(grad.dtype == input.dtype, "grad and input dtypes differ");
  switch (output.scaling_mode) {
    case ScalingMode::kPerTensor: {
      const dim3 grid = pointwise_grid(grad.numel());
      const dim3 block(kPointwiseThreads);
      ACTLIB_TYPE_SWITCH_INPUT(input.dtype, IType,
        ACTLIB_TYPE_SWITCH_OUTPUT(output.dtype, OType,
          dgated_act_kernel<fp32, Param, ActOP, DActOP, IType, OType><<<grid, block, 0, stream>>>(
              static_cast<const IType *>(grad.data), static_cast<const IType *>(input.data),
              static_cast<OType *>(output.data), output.scale, output.amax, output.scale_inv, p,
              grad.rows, grad.cols);););
      ACTLIB_CHECK_CUDA(cudaGetLastError());
      break;
    }
    default:
      ACTLIB_ERROR("gated activations support per-tensor outputs only");
  }
}

}  // namespace actlib

#endif  // ACTLIB_CAST_DISPATCH_CUH_
