// Runs the patched sharedlib on a GPU (tests/apply/test_shared_variables.py): two grouped scalings
// per dtype with different factors, each checked on the host. The NVRTC kernel reads the group
// table the static writer kernel fills; reading its module's own zero-initialised table instead,
// it would leave the output zero (count 0). Prints "ok" and exits 0 when every value matches.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "sharedlib/scale.h"

static int check(int groups, int n, const std::vector<float> &factors, int squared) {
  std::vector<float> in(static_cast<size_t>(groups) * n), out(in.size(), 0.f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.25f * static_cast<float>(i % 97) - 3.f;
  float *d_in = nullptr, *d_out = nullptr, *d_scales = nullptr;
  cudaMalloc(&d_in, in.size() * sizeof(float));
  cudaMalloc(&d_out, in.size() * sizeof(float));
  cudaMalloc(&d_scales, groups * sizeof(float));
  cudaMemcpy(d_in, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_scales, factors.data(), groups * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_out, 0, in.size() * sizeof(float));
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  sharedlib_group_scale(d_in, d_out, d_scales, groups, n, SHAREDLIB_FLOAT32, squared, stream);
  cudaStreamSynchronize(stream);
  cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int g = 0; g < groups; ++g) {
    const float s = squared ? factors[g] * factors[g] : factors[g];
    for (int i = 0; i < n; ++i) {
      const size_t at = static_cast<size_t>(g) * n + i;
      if (std::fabs(out[at] - in[at] * s) > 1e-5f * std::fabs(in[at] * s) + 1e-6f && bad++ < 5) {
        std::printf("group %d element %d: %g, expected %g\n", g, i, out[at], in[at] * s);
      }
    }
  }
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_scales);
  cudaStreamDestroy(stream);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(status));
    return 1;
  }
  return bad;
}

int main() {
  int bad = check(3, 1000, {2.f, 3.f, 4.f}, 0);          // first launch: compile, then the copy
  bad += check(5, 300, {5.f, -1.f, 0.5f, 7.f, 9.f}, 0);  // the same variant, a new table
  bad += check(2, 4096, {1.5f, 2.5f}, 1);                // another variant
  std::printf(bad == 0 ? "ok\n" : "%d values differ\n", bad);
  return bad == 0 ? 0 : 1;
}
