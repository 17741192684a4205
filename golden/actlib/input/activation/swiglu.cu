// SiLU and the SwiGLU family (plain and clamped).
#include "actlib/activation.h"

#include "../cast/dispatch.cuh"
#include "../util/math.h"

void actlib_silu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  quantize_fwd_helper<true, Empty, silu<fp32, Empty>>(input, output, nullptr, stream);
}

void actlib_swiglu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  const Empty e{};
  quantize_gated_fwd_helper<Empty, silu<fp32, Empty>>(input, output, e, stream);
}

void actlib_dswiglu(const ActlibTensor grad, const ActlibTensor input, ActlibTensor output,
                    cudaStream_t stream) {
  using namespace actlib;
  const Empty e{};
  quantize_gated_bwd_helper<Empty, silu<fp32, Empty>, dsilu<fp32, Empty>>(grad, input, output, e,
                                                                         stream);
}

void actlib_clamped_swiglu(const ActlibTensor input, ActlibTensor output, float limit, float alpha,
                           cudaStream_t stream) {
  using namespace actlib;
  ClampParam param;
  param.limit = limit;
  param.alpha = alpha;
  quantize_gated_fwd_helper<ClampParam, clamped_silu<fp32, ClampParam>>(input, output, param,
                                                                         stream);
}
