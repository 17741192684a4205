// The graph plan: host code that launches a kernel of plan/scale.cu and runs an execution graph. No
// device code of its own (the layout of TE's fused_attn/fused_attn_fp8.cu, cuDNN graphs and
// launches of kernels defined in fused_attn/utils.cu).
#include <vector>

#include "kernels.cuh"
#include "plan.h"

namespace ctlib {
namespace plan {

void GraphPlan::run(const float *x, float *y, size_t n, float scale, cudaStream_t stream) {
  graph_.add("scale");
  if (scale == 0.0f) {
    const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (blocks == 0) return;
    fill_kernel<<<blocks, 256, 0, stream>>>(y, n, 0.0f);
    CTLIB_CHECK_CUDA(cudaGetLastError());
    return;
  }
  std::vector<float> host(n);
  CTLIB_CHECK_CUDA(cudaMemcpyAsync(host.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CTLIB_CHECK_CUDA(cudaStreamSynchronize(stream));
  for (float &v : host) v *= scale;
  CTLIB_CHECK_CUDA(cudaMemcpyAsync(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CTLIB_CHECK_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace plan
}  // namespace ctlib
