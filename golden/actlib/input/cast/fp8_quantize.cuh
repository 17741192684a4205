// Per-tensor FP8 quantization of a 2-D tensor in 32x64 tiles, optionally fused with an
// activation gradient and a column-sum (dbias) reduced through an fp32 workspace.
#ifndef ACTLIB_CAST_FP8_QUANTIZE_CUH_
#define ACTLIB_CAST_FP8_QUANTIZE_CUH_

#include "../common.h"
#include "../util/vectorized_pointwise.h"

namespace actlib {

constexpr size_t kTileRows = 32;
constexpr size_t kTileCols = 64;

// One CTA per tile, one thread per tile column. The fp32 tile is staged in dynamic shared memory.
template <bool IS_DBIAS, bool IS_DACT, typename Param, float (*OP)(float, const Param &),
          typename IType, typename OType>
__global__ void cast_fp8_kernel(const IType *in, const IType *act_in, OType *out,
                                const float *scale, float *amax, float *scale_inv,
                                float *dbias_workspace, Param p, size_t rows, size_t cols) {
  extern __shared__ float tile[];
  const size_t col = blockIdx.x * kTileCols + threadIdx.x;
  const size_t row0 = blockIdx.y * kTileRows;
  for (size_t r = 0; r < kTileRows; ++r) {
    const size_t row = row0 + r;
    float v = 0.0f;
    if (row < rows && col < cols) {
      const float x = static_cast<float>(in[row * cols + col]);
      if constexpr (IS_DACT) {
        v = x * OP(static_cast<float>(act_in[row * cols + col]), p);
      } else {
        v = apply_op<float, Param, OP>(x, p);
      }
    }
    tile[r * kTileCols + threadIdx.x] = v;
  }
  __syncthreads();
  const float s = *scale;
  float local = 0.0f;
  float column_sum = 0.0f;
  for (size_t r = 0; r < kTileRows; ++r) {
    const size_t row = row0 + r;
    const float v = tile[r * kTileCols + threadIdx.x];
    if (row < rows && col < cols) {
      out[row * cols + col] = static_cast<OType>(v * s);
      local = fmaxf(local, fabsf(v));
      column_sum += v;
    }
  }
  if constexpr (IS_DBIAS) {
    if (col < cols) dbias_workspace[blockIdx.y * cols + col] = column_sum;
  }
  reduce_amax(local, amax);
  store_scale_inv(s, scale_inv);
}

// dbias[c] = sum over workspace rows of workspace[r, c], cast to the input dtype.
template <typename IType>
__global__ void reduce_dbias_kernel(const float *workspace, IType *dbias, size_t workspace_rows,
                                    size_t cols) {
  const size_t col = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float sum = 0.0f;
  for (size_t r = 0; r < workspace_rows; ++r) sum += workspace[r * cols + col];
  dbias[col] = static_cast<IType>(sum);
}

template <bool IS_DBIAS, bool IS_DACT, typename Param, float (*OP)(float, const Param &),
          typename IType, typename OType>
void launch_cast_fp8(const Tensor &input, const Tensor *act_input, Tensor &output,
                     ActlibTensor dbias, ActlibTensor workspace, const Param &p,
                     cudaStream_t stream) {
  const size_t rows = input.rows, cols = input.cols;
  const size_t tiles_y = (rows + kTileRows - 1) / kTileRows;
  float *dbias_workspace = nullptr;
  if constexpr (IS_DBIAS) {
    ACTLIB_CHECK(dbias != nullptr && workspace != nullptr, "dbias needs dbias and workspace");
    if (workspace->data == nullptr) {
      // Workspace query: report the shape the caller must allocate, launch nothing.
      workspace->rows = tiles_y;
      workspace->cols = cols;
      workspace->dtype = kActlibFloat32;
      return;
    }
    ACTLIB_CHECK(workspace->rows * workspace->cols >= tiles_y * cols, "workspace too small");
    dbias_workspace = static_cast<float *>(workspace->data);
  }
  ACTLIB_CHECK(output.scale != nullptr, "fp8 output needs a scale");
  const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>(tiles_y));
  const dim3 block(kTileCols);
  const size_t smem = kTileRows * kTileCols * sizeof(float);
  const IType *act = act_input != nullptr ? static_cast<const IType *>(act_input->data) : nullptr;

  auto kernel = cast_fp8_kernel<IS_DBIAS, IS_DACT, Param, OP, IType, OType>;
  ACTLIB_CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem)));
  kernel<<<grid, block, smem, stream>>>(static_cast<const IType *>(input.data), act,
                                        static_cast<OType *>(output.data), output.scale,
                                        output.amax, output.scale_inv, dbias_workspace, p, rows,
                                        cols);
  ACTLIB_CHECK_CUDA(cudaGetLastError());

  if constexpr (IS_DBIAS) {
    const dim3 reduce_grid(static_cast<unsigned>((cols + 255) / 256));
    reduce_dbias_kernel<IType><<<reduce_grid, 256, 0, stream>>>(
        dbias_workspace, static_cast<IType *>(dbias->data), tiles_y, cols);
    ACTLIB_CHECK_CUDA(cudaGetLastError());
  }
}

}  // namespace actlib

#endif  // ACTLIB_CAST_FP8_QUANTIZE_CUH_
