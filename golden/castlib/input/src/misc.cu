// Fill, iota, negate (through a kernel table) and caller-supplied kernels.
#include "common.h"

namespace castlib {

__global__ void iota_kernel(float *out, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    out[i] = static_cast<float>(i);
  }
}

template <typename T>
__global__ void fill_kernel(T *out, size_t n, float value) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    out[i] = static_cast<T>(value);
  }
}

// Type-erased signature so that every instantiation fits one table.
template <typename T>
__global__ void negate_kernel(const void *in, void *out, size_t n) {
  const T *src = static_cast<const T *>(in);
  T *dst = static_cast<T *>(out);
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<T>(-static_cast<float>(src[i]));
  }
}

using NegateFn = void (*)(const void *, void *, size_t);

// Indexed by castlib_dtype.
static const NegateFn kNegateTable[] = {negate_kernel<float>, negate_kernel<__half>,
                                        negate_kernel<__nv_bfloat16>};

}  // namespace castlib

void castlib_iota(float *out, size_t n, cudaStream_t stream) {
  using namespace castlib;
  iota_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, n);
  check_cuda(cudaGetLastError(), "castlib_iota");
}

void castlib_fill(void *out, size_t n, float value, castlib_dtype dtype, cudaStream_t stream) {
  using namespace castlib;
  cudaLaunchAttribute attrs[1];
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid_for(n);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = 1;
  CASTLIB_TYPE_SWITCH(dtype, T,
    check_cuda(cudaLaunchKernelEx(&config, fill_kernel<T>, static_cast<T *>(out), n, value),
               "cudaLaunchKernelEx(fill_kernel)"););
}

void castlib_negate(const void *in, void *out, size_t n, castlib_dtype dtype, cudaStream_t stream) {
  using namespace castlib;
  const int index = static_cast<int>(dtype);
  if (index < 0 || index >= static_cast<int>(sizeof(kNegateTable) / sizeof(kNegateTable[0]))) {
    throw std::invalid_argument("castlib_negate: unsupported dtype");
  }
  kNegateTable[index]<<<grid_for(n), kThreads, 0, stream>>>(in, out, n);
  check_cuda(cudaGetLastError(), "castlib_negate");
}

void castlib_apply(castlib_unary_fn fn, const float *in, float *out, size_t n, cudaStream_t stream) {
  using namespace castlib;
  // NOTE: `fn` comes from the caller; which kernel it names is unknown until run time.
  fn<<<grid_for(n), kThreads, 0, stream>>>(in, out, n);
  castlib::check_cuda(cudaGetLastError(), "castlib_apply");
}
