// LayerNorm backward launchers: the backward kernel, then the finalize kernel.
#include "../common.h"
#include "../kernel_traits.h"
#include "ln_kernels.cuh"

using namespace layerlib;

template <typename weight_t, typename input_t, typename compute_t, typename index_t, int HIDDEN_SIZE,
          int WARPS_M, int WARPS_N, int BYTES_PER_LDG_FINAL>
void launch_ln_bwd_(LaunchParams<BackwardParams> &launch_params, const bool configure_params) {
  using Kernel_traits =
      Kernel_traits<weight_t, input_t, compute_t, index_t, HIDDEN_SIZE, 1, WARPS_M, WARPS_N>;
  auto kernel = &ln_bwd_kernel<Kernel_traits>;
  if (configure_params) {
    int ctas_per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                   &ctas_per_sm, kernel, Kernel_traits::THREADS_PER_CTA, Kernel_traits::SMEM_BYTES),
               "occupancy");
    launch_params.params.ctas_per_row = 1;
    launch_params.params.ctas_per_col = launch_params.sm_count * ctas_per_sm;
    return;
  }
  if (Kernel_traits::SMEM_BYTES >= 48 * 1024) {
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    Kernel_traits::SMEM_BYTES),
               "smem");
  }
  dim3 grid(launch_params.params.ctas_per_col);
  dim3 block(Kernel_traits::THREADS_PER_ROW, Kernel_traits::WARPS_M);
  kernel<<<grid, block, 0, launch_params.stream>>>(launch_params.params);
  check_cuda(cudaGetLastError(), "ln_bwd_kernel");

  constexpr uint32_t WARPS_M_FINAL = 4;
  constexpr uint32_t COLS_PER_CTA_FINAL =
      Kernel_traits::THREADS_PER_WARP * BYTES_PER_LDG_FINAL / sizeof(compute_t);
  auto kernel_final = &ln_bwd_finalize_kernel<weight_t, compute_t, WARPS_M_FINAL,
                                              BYTES_PER_LDG_FINAL, Kernel_traits::THREADS_PER_WARP>;
  dim3 block_final(Kernel_traits::THREADS_PER_WARP, WARPS_M_FINAL);
  dim3 grid_final((launch_params.params.cols + COLS_PER_CTA_FINAL - 1) / COLS_PER_CTA_FINAL);
  kernel_final<<<grid_final, block_final, 0, launch_params.stream>>>(launch_params.params);
  check_cuda(cudaGetLastError(), "ln_bwd_finalize_kernel");
}

#define REGISTER_LAUNCHER(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE, ...)                      \
  namespace {                                                                                 \
  void norm_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE(                                  \
      LaunchParams<STAGE##Params> &launch_params, const bool configure_params) {              \
    launch_ln_bwd_<WTYPE, ITYPE, CTYPE, uint32_t, HIDDEN, __VA_ARGS__>(launch_params,         \
                                                                       configure_params);     \
  }                                                                                           \
  REGISTER_BASE(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE,                                     \
                norm_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE);                        \
  }  // namespace

// HIDDEN, WTYPE, ITYPE, CTYPE, WARPS_M, WARPS_N, BYTES_PER_LDG_FINAL
REGISTER_LAUNCHER(LayerNorm, Backward, 256, fp32, fp32, fp32, 4, 1, 4);
REGISTER_LAUNCHER(LayerNorm, Backward, 256, fp16, fp16, fp32, 4, 1, 4);
REGISTER_LAUNCHER(LayerNorm, Backward, 256, bf16, bf16, fp32, 4, 1, 4);
REGISTER_LAUNCHER(LayerNorm, Backward, 1024, fp32, fp32, fp32, 1, 4, 4);
REGISTER_LAUNCHER(LayerNorm, Backward, 1024, fp16, fp16, fp32, 1, 4, 4);
REGISTER_LAUNCHER(LayerNorm, Backward, 1024, bf16, bf16, fp32, 1, 4,
                  8);  // BYTES_PER_LDG_FINAL
