// Dequantization: FP8 data times its scale_inv, through the element-wise launcher of
// util/vectorized_pointwise.h with a functor and parameter struct of its own. This TU is outside
// the activation rule's analysis (as a library's other families are), so after a migration its
// uses of the rewritten launch site must keep the static kernel: the stubs cannot name its functor.
#include "actlib/cast.h"

#include "../common.h"
#include "../util/vectorized_pointwise.h"

namespace actlib {
namespace dequant {

struct DequantizeParam {
  const fp32 *scale_inv;
};

__device__ inline fp32 dequantize_func(fp32 value, const DequantizeParam &p) {
  return value * (*p.scale_inv);
}

}  // namespace dequant

// One instantiation of the launcher per (input, output) pair; nvec is fixed here, not by the entry.
template <typename IType, typename OType>
void dequantize_launch(const Tensor &in, Tensor &out, const dequant::DequantizeParam &p,
                       cudaStream_t stream) {
  launch_unary<4, dequant::DequantizeParam, dequant::dequantize_func, IType, OType>(in, out, p, stream);
}

}  // namespace actlib

void actlib_dequantize(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  Tensor in = view(input);
  Tensor out = view(output);
  ACTLIB_CHECK(in.numel() == out.numel(), "dequantize: input and output sizes differ");
  ACTLIB_CHECK(in.scale_inv != nullptr, "dequantize: the input has no scale_inv");
  const dequant::DequantizeParam p{in.scale_inv};
  ACTLIB_TYPE_SWITCH_FP8ONLY(in.dtype, IType,
    ACTLIB_TYPE_SWITCH_OUTPUT(out.dtype, OType,
      dequantize_launch<IType, OType>(in, out, p, stream);
    )
  )
}
