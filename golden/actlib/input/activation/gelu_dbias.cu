// Fused dGELU + quantize + dbias.
#include "actlib/activation.h"

#include "../cast/dispatch.cuh"
#include "../util/math.h"

void actlib_quantize_dbias_dgelu(const ActlibTensor grad, const ActlibTensor input,
                                 ActlibTensor output, ActlibTensor dbias, ActlibTensor workspace,
                                 cudaStream_t stream) {
  using namespace actlib;
  quantize_bwd_helper<true, true, Empty, dgelu<fp32, Empty>>(grad, input, output, dbias, workspace,
                                                              stream);
}
