// Row sums and absolute maximum.
#include "common.h"

namespace castlib {

constexpr int kRowsumThreads = 32;
constexpr int kAmaxThreads = 256;

// Rows come in groups of 32: one CTA per 32 rows, one thread per row.
template <typename T>
__global__ void
#if defined(__CUDACC__) && !defined(CASTLIB_NO_LAUNCH_BOUNDS)
__launch_bounds__(kRowsumThreads)
#endif
rowsum_tiled_kernel(const T *in, float *out, size_t rows, size_t cols) {
  const size_t r = size_t(blockIdx.x) * kRowsumThreads + threadIdx.x;
  float sum = 0.0f;
  for (size_t c = 0; c < cols; ++c) sum += static_cast<float>(in[r * cols + c]);
  out[r] = sum;
}

template <typename T>
__global__ void rowsum_generic_kernel(const T *in, float *out, size_t rows, size_t cols) {
  for (size_t r = size_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += size_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (size_t c = 0; c < cols; ++c) sum += static_cast<float>(in[r * cols + c]);
    out[r] = sum;
  }
}

// Each thread folds UNROLL strided elements per step; result merged with an integer atomicMax.
template <typename T, int UNROLL>
__global__ void amax_kernel(const T *in, size_t n, float *out) {
  float local = 0.0f;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride * UNROLL) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const size_t j = i + k * stride;
      if (j < n) local = fmaxf(local, fabsf(static_cast<float>(in[j])));
    }
  }
  atomicMax(reinterpret_cast<int *>(out), __float_as_int(local));
}

}  // namespace castlib

void castlib_rowsum(const void *in, float *out, size_t rows, size_t cols, castlib_dtype dtype,
                    cudaStream_t stream) {
  using namespace castlib;
  CASTLIB_TYPE_SWITCH(dtype, T,
    const T *src = static_cast<const T *>(in);
    if (rows % 32 == 0) {
      const dim3 grid(static_cast<unsigned>(rows / kRowsumThreads));
      rowsum_tiled_kernel<T><<<grid, kRowsumThreads, 0, stream>>>(src, out, rows, cols);
    } else {
      rowsum_generic_kernel<T><<<grid_for(rows), kThreads, 0, stream>>>(src, out, rows, cols);
    });
  check_cuda(cudaGetLastError(), "castlib_rowsum");
}

void castlib_amax_f32(const float *in, size_t n, float *out, cudaStream_t stream) {
  using namespace castlib;
  int device = 0, sms = 0, blocks_per_sm = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, amax_kernel<float, 4>,
                                                           kAmaxThreads, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const size_t wanted = (n + kAmaxThreads * 4 - 1) / (kAmaxThreads * 4);
  const size_t resident = static_cast<size_t>(blocks_per_sm) * sms;
  const dim3 grid(static_cast<unsigned>(wanted == 0 ? 1 : (wanted < resident ? wanted : resident)));
  check_cuda(cudaMemsetAsync(out, 0, sizeof(float), stream), "cudaMemsetAsync");
  amax_kernel<float, 4><<<grid, kAmaxThreads, 0, stream>>>(in, n, out);
  check_cuda(cudaGetLastError(), "castlib_amax_f32");
}
