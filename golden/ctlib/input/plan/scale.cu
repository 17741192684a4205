// y = scale * x through a plan: the kernel plan. The unit includes plan.h for the plan types only,
// as TE's normalization kernel units include normalization/common.h.
#include "kernels.cuh"
#include "plan.h"

namespace ctlib {
namespace plan {
namespace {

__global__ void scale_kernel(const float *x, float *y, size_t n, float scale) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = scale * x[i];
}

class KernelPlan : public PlanBase {
 public:
  void run(const float *x, float *y, size_t n, float scale, cudaStream_t stream) override {
    const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (blocks == 0) return;
    scale_kernel<<<blocks, 256, 0, stream>>>(x, y, n, scale);
    CTLIB_CHECK_CUDA(cudaGetLastError());
  }
};

}  // namespace

__global__ void fill_kernel(float *y, size_t n, float value) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = value;
}

PlanBase *kernel_plan() {
  static KernelPlan plan;
  return &plan;
}

}  // namespace plan
}  // namespace ctlib

void ctlib_scale(const float *x, float *y, size_t n, float scale, int use_graph, cudaStream_t stream) {
  ctlib::plan::get_plan(use_graph != 0)->run(x, y, n, scale, stream);
}
