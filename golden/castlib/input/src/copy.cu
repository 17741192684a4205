// Copy and dtype conversion.
#include "common.h"

namespace castlib {

template <typename T>
__global__ void copy_kernel(const T *in, T *out, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

// VEC elements per thread per iteration.
template <typename IT, typename OT, int VEC>
__global__ void convert_kernel(const IT *in, OT *out, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x * VEC;
  for (size_t base = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC; base < n;
       base += stride) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (base + k < n) out[base + k] = static_cast<OT>(static_cast<float>(in[base + k]));
    }
  }
}

}  // namespace castlib

// NOTE: the launch is spelled inside this macro body; each use below expands it once.
#define LAUNCH_COPY(T) \
  castlib::copy_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T *>(in), static_cast<T *>(out), n)

void castlib_copy(const void *in, void *out, size_t n, castlib_dtype dtype, cudaStream_t stream) {
  const dim3 grid = castlib::grid_for(n);
  const dim3 block(castlib::kThreads);
  switch (dtype) {
    case CASTLIB_FLOAT32: LAUNCH_COPY(float); break;
    case CASTLIB_FLOAT16: LAUNCH_COPY(__half); break;
    case CASTLIB_BFLOAT16: LAUNCH_COPY(__nv_bfloat16); break;
    default: throw std::invalid_argument("castlib_copy: unsupported dtype");
  }
  castlib::check_cuda(cudaGetLastError(), "castlib_copy");
}

void castlib_convert(const void *in, castlib_dtype in_dtype, void *out, castlib_dtype out_dtype,
                     size_t n, cudaStream_t stream) {
  using namespace castlib;
  const dim3 grid = grid_for((n + 3) / 4);
  const dim3 block(kThreads);
  CASTLIB_TYPE_SWITCH(in_dtype, IT,
    CASTLIB_TYPE_SWITCH(out_dtype, OT,
      convert_kernel<IT, OT, 4><<<grid, block, 0, stream>>>(static_cast<const IT *>(in), static_cast<OT *>(out), n);));
  check_cuda(cudaGetLastError(), "castlib_convert");
}
