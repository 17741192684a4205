// ReLU entry points.
#include "actlib/activation.h"

#include "../cast/dispatch.cuh"
#include "../util/math.h"

void actlib_relu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  quantize_fwd_helper<true, Empty, relu<fp32, Empty>>(input, output, nullptr, stream);
}

void actlib_drelu(const ActlibTensor grad, const ActlibTensor input, ActlibTensor output,
                  cudaStream_t stream) {
  using namespace actlib;
  quantize_bwd_helper<false, true, Empty, drelu<fp32, Empty>>(grad, input, output, nullptr,
                                                               nullptr, stream);
}
