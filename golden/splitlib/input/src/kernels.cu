// splitlib: the kernels' definitions and the list of what the build compiles, one line per
// instantiation through a macro.
#include "kernels.cuh"

template <typename T, int BLOCK>
__global__ void scale_kernel(const T *in, T *out, float s, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = T(static_cast<float>(in[i]) * s);
}

template <typename T>
__global__ void shift_kernel(T *data, float by, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = T(static_cast<float>(data[i]) + by);
}

#define MAKE_scale_kernel(T, BLOCK) template __global__ void scale_kernel<T, BLOCK>(const T *, T *, float, int);

MAKE_scale_kernel(float, 128)
MAKE_scale_kernel(float, 256)
MAKE_scale_kernel(__half, 128)
MAKE_scale_kernel(__half, 256)

template __global__ void shift_kernel<float>(float *data, float by, int n);
