// Runtime-compiled (NVRTC) tiled transpose. Element types are same-size unsigned integers, so no
// CUDA headers are needed. Embedded at build time as string_code_rtc_transpose_cu.
namespace actlib_rtc {

template <typename T, int TILE>
__global__ void transpose_kernel(const T *in, T *out, unsigned long long rows,
                                 unsigned long long cols) {
  __shared__ T tile[TILE][TILE + 1];
  const unsigned long long c = blockIdx.x * TILE + threadIdx.x;
  for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
    const unsigned long long r = blockIdx.y * TILE + k;
    if (r < rows && c < cols) tile[k][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  const unsigned long long oc = blockIdx.y * TILE + threadIdx.x;
  for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
    const unsigned long long orow = blockIdx.x * TILE + k;
    if (orow < cols && oc < rows) out[orow * rows + oc] = tile[threadIdx.x][k];
  }
}

}  // namespace actlib_rtc
