// GELU entry points.
#include "actlib/activation.h"

#include "../cast/dispatch.cuh"
#include "../util/math.h"

void actlib_gelu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  quantize_fwd_helper<true, Empty, gelu<fp32, Empty>>(input, output, nullptr, stream);
}

void actlib_dgelu(const ActlibTensor grad, const ActlibTensor input, ActlibTensor output,
                  cudaStream_t stream) {
  using namespace actlib;
  quantize_bwd_helper<false, true, Empty, dgelu<fp32, Empty>>(grad, input, output, nullptr,
                                                               nullptr, stream);
}
