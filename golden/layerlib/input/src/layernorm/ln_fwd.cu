// LayerNorm forward launchers, one per registered configuration.
#include "../common.h"
#include "../kernel_traits.h"
#include "ln_kernels.cuh"

using namespace layerlib;

template <typename weight_t, typename input_t, typename compute_t, typename index_t, int HIDDEN_SIZE,
          int CTAS_PER_ROW, int WARPS_M, int WARPS_N, int BYTES_PER_LDG = 16>
void launch_ln_fwd_(LaunchParams<ForwardParams> &launch_params, const bool configure_params) {
  using Kernel_traits = Kernel_traits<weight_t, input_t, compute_t, index_t, HIDDEN_SIZE,
                                      CTAS_PER_ROW, WARPS_M, WARPS_N, BYTES_PER_LDG>;
  auto kernel = &ln_fwd_kernel<Kernel_traits>;
  if (configure_params) {
    int ctas_per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, kernel,
                                                             Kernel_traits::THREADS_PER_CTA, 0),
               "occupancy");
    launch_params.params.ctas_per_row = CTAS_PER_ROW;
    launch_params.params.ctas_per_col = launch_params.sm_count * ctas_per_sm / CTAS_PER_ROW;
    return;
  }
  dim3 grid(launch_params.params.ctas_per_row * launch_params.params.ctas_per_col);
  dim3 block(Kernel_traits::THREADS_PER_ROW, Kernel_traits::WARPS_M);
  if (Kernel_traits::CTAS_PER_ROW == 1) {
    kernel<<<grid, block, 0, launch_params.stream>>>(launch_params.params);
    check_cuda(cudaGetLastError(), "ln_fwd_kernel");
  } else {
    void *args[] = {&launch_params.params};
    check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(kernel), grid, block, args, 0,
                                           launch_params.stream),
               "ln_fwd_kernel (cooperative)");
  }
}

// REGISTER_LAUNCHER(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE, CTAS_PER_ROW, WARPS_M, WARPS_N
//                   [, BYTES_PER_LDG]): the trailing arguments reach the launcher's template
// parameters through __VA_ARGS__.
#define REGISTER_LAUNCHER(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE, ...)                      \
  namespace {                                                                                 \
  void norm_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE(                                  \
      LaunchParams<STAGE##Params> &launch_params, const bool configure_params) {              \
    launch_ln_fwd_<WTYPE, ITYPE, CTYPE, uint32_t, HIDDEN, __VA_ARGS__>(launch_params,         \
                                                                       configure_params);     \
  }                                                                                           \
  REGISTER_BASE(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE,                                     \
                norm_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE);                        \
  }  // namespace

REGISTER_LAUNCHER(LayerNorm, Forward, 256, fp32, fp32, fp32, 1, 4, 1, 16);
REGISTER_LAUNCHER(LayerNorm, Forward, 256, fp16, fp16, fp32, 1, 4, 1);  // BYTES_PER_LDG: default
REGISTER_LAUNCHER(LayerNorm, Forward, 256, bf16, bf16, fp32, 1, 4, 1);
REGISTER_LAUNCHER(LayerNorm, Forward, 1024, fp32, fp32, fp32, 2, 1, 4, 16);
REGISTER_LAUNCHER(LayerNorm, Forward, 1024, fp16, fp16, fp32, 2, 1, 4, 8);
REGISTER_LAUNCHER(LayerNorm, Forward, 1024, bf16, bf16, fp32,
                  2,  // CTAS_PER_ROW: cooperative
                  1, 4, 8);
