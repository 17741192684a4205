// scanlib: a fill kernel whose variants are listed as explicit instantiations (what the build
// compiles, whoever launches them); the float one is also launched here.
#include <cuda_fp16.h>

#include "scan.h"

template <typename T, int kVec>
__global__ void scan_fill_kernel(T *out, int n) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  for (int v = 0; v < kVec && i + v < n; ++v) out[i + v] = T(0.f);
}

template __global__ void scan_fill_kernel<float, 4>(float *, int);
template __global__ void scan_fill_kernel<__half, 8>(__half *out, int n);

void scan_fill(float *out, int n, cudaStream_t stream) {
  scan_fill_kernel<float, 4><<<(n + 511) / 512, 128, 0, stream>>>(out, n);
}
