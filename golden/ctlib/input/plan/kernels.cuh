// ctlib's plan kernels, defined in plan/scale.cu.
#ifndef CTLIB_PLAN_KERNELS_CUH_
#define CTLIB_PLAN_KERNELS_CUH_

#include <cstddef>

namespace ctlib {
namespace plan {

// y[i] = value for i < n.
__global__ void fill_kernel(float *y, size_t n, float value);

}  // namespace plan
}  // namespace ctlib

#endif  // CTLIB_PLAN_KERNELS_CUH_
