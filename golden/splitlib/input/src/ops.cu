// splitlib: the host launchers, compiled for the dtypes listed at the end. The kernels' bodies are
// not visible here: kernels.cu compiles them.
#include <cuda_runtime.h>

#include "kernels.cuh"

template <typename T>
void scale(const T *in, T *out, float s, int n, cudaStream_t stream) {
  if (n < 4096) {
    scale_kernel<T, 128><<<(n + 127) / 128, 128, 0, stream>>>(in, out, s, n);
  } else {
    scale_kernel<T, 256><<<(n + 255) / 256, 256, 0, stream>>>(in, out, s, n);
  }
}

void shift(float *data, float by, int n, cudaStream_t stream) {
  shift_kernel<float><<<(n + 255) / 256, 256, 0, stream>>>(data, by, n);
}

template void scale<float>(const float *, float *, float, int, cudaStream_t);
template void scale<__half>(const __half *, __half *, float, int, cudaStream_t);
