// The grouped-scaling entry point.
#include "common.h"
#include "group_scale.cuh"

void sharedlib_group_scale(const void *in, void *out, const float *scales, int groups, int n,
                           sharedlib_dtype dtype, int squared, cudaStream_t stream) {
  using namespace sharedlib;
  if (groups < 1 || groups > kMaxGroups) throw std::invalid_argument("sharedlib: 1 to 64 groups");
  SHAREDLIB_TYPE_SWITCH(
      static_cast<DType>(dtype), T, if (squared) {
        group_scale<T, true>(static_cast<const T *>(in), static_cast<T *>(out), scales, groups, n,
                             stream);
      } else {
        group_scale<T, false>(static_cast<const T *>(in), static_cast<T *>(out), scales, groups, n,
                              stream);
      });
}
