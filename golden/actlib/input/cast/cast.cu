// Plain quantization entry points (no activation).
#include "actlib/cast.h"

#include "dispatch.cuh"

void actlib_quantize(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  quantize_fwd_helper<false, Empty, nullptr>(input, output, nullptr, stream);
}

void actlib_quantize_dbias(const ActlibTensor input, ActlibTensor output, ActlibTensor dbias,
                           ActlibTensor workspace, cudaStream_t stream) {
  using namespace actlib;
  quantize_bwd_helper<true, false, Empty, nullptr>(input, nullptr, output, dbias, workspace,
                                                   stream);
}
