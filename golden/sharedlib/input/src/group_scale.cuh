// Grouped scaling, the pattern of TransformerEngine's grouped MXFP8 quantize: a writer kernel
// fills a namespace-scope __device__ table that the templated reader kernel, launched right
// after it on the same stream, reads.
#ifndef SHAREDLIB_GROUP_SCALE_CUH_
#define SHAREDLIB_GROUP_SCALE_CUH_

#include "common.h"

namespace sharedlib {

constexpr int kMaxGroups = 64;

struct GroupTable {
  float scale[kMaxGroups];
  int count;
};

// Internal linkage: each unit including this header has its own table.
static __device__ GroupTable g_groups;

// One thread per group copies the caller's scales into the table.
template <typename T>
__global__ void update_groups_kernel(const float *scales, int groups) {
  const int g = threadIdx.x;
  if (g < groups) g_groups.scale[g] = scales[g];
  if (g == 0) g_groups.count = groups;
}

// blockIdx.y is the group; its factor comes from the table.
template <typename T, bool SQUARED>
__global__ void group_scale_kernel(const T *in, T *out, int n) {
  const int g = blockIdx.y;
  if (g >= g_groups.count) return;
  float s = g_groups.scale[g];
  if (SQUARED) s *= s;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const size_t at = static_cast<size_t>(g) * n + i;
    out[at] = static_cast<T>(static_cast<float>(in[at]) * s);
  }
}

template <typename T, bool SQUARED>
void group_scale(const T *in, T *out, const float *scales, int groups, int n, cudaStream_t stream) {
  update_groups_kernel<T><<<1, kMaxGroups, 0, stream>>>(scales, groups);
  check_cuda(cudaGetLastError(), "update_groups_kernel");
  const dim3 grid((n + 255) / 256, groups);
  group_scale_kernel<T, SQUARED><<<grid, 256, 0, stream>>>(in, out, n);
  check_cuda(cudaGetLastError(), "group_scale_kernel");
}

}  // namespace sharedlib

#endif  // SHAREDLIB_GROUP_SCALE_CUH_
