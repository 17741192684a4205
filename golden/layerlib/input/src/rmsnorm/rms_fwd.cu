// RMSNorm forward launchers (plain, zero-centered gamma, and fused residual add).
#include "../common.h"
#include "../kernel_traits.h"
#include "rms_kernels.cuh"

using namespace layerlib;

template <typename weight_t, typename input_t, typename compute_t, typename index_t, int HIDDEN_SIZE,
          int WARPS_M, int WARPS_N, bool FUSED_ADD = false>
void launch_rmsnorm_fwd_(LaunchParams<ForwardParams> &launch_params, const bool configure_params) {
  using Kernel_traits = Kernel_traits<weight_t, input_t, compute_t, index_t, HIDDEN_SIZE, 1, WARPS_M,
                                      WARPS_N, 16>;
  auto kernel = &rmsnorm_fwd_kernel<Kernel_traits, FUSED_ADD>;
  if (configure_params) {
    int ctas_per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, kernel,
                                                             Kernel_traits::THREADS_PER_CTA, 0),
               "occupancy");
    launch_params.params.ctas_per_row = 1;
    launch_params.params.ctas_per_col = launch_params.sm_count * ctas_per_sm;
    return;
  }
  dim3 block(Kernel_traits::THREADS_PER_ROW, Kernel_traits::WARPS_M);
  kernel<<<launch_params.params.ctas_per_col, block, 0, launch_params.stream>>>(launch_params.params);
  check_cuda(cudaGetLastError(), "rmsnorm_fwd_kernel");
}

#define REGISTER_LAUNCHER(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE, ...)                      \
  namespace {                                                                                 \
  void norm_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE(                                  \
      LaunchParams<STAGE##Params> &launch_params, const bool configure_params) {              \
    launch_rmsnorm_fwd_<WTYPE, ITYPE, CTYPE, uint32_t, HIDDEN, __VA_ARGS__>(launch_params,    \
                                                                            configure_params); \
  }                                                                                           \
  REGISTER_BASE(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE,                                     \
                norm_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE);                        \
  }  // namespace

// HIDDEN, WTYPE, ITYPE, CTYPE, WARPS_M, WARPS_N [, FUSED_ADD]
REGISTER_LAUNCHER(RMSNorm, Forward, 512, fp32, fp32, fp32, 4, 1);
REGISTER_LAUNCHER(RMSNorm, Forward, 512, fp16, fp16, fp32, 4, 1);
REGISTER_LAUNCHER(RMSNorm, Forward, 512, bf16, bf16, fp32, 4, 1);
// The kernel reads zero_centered_gamma at run time: same instantiation as the plain fp32 one.
REGISTER_LAUNCHER(RMSNormZeroCentered, Forward, 512, fp32, fp32, fp32, 4, 1,
                  false);  // FUSED_ADD, spelled
REGISTER_LAUNCHER(RMSNorm, ForwardAdd, 512, fp32, fp32, fp32, 4, 1, true);
REGISTER_LAUNCHER(RMSNorm, ForwardAdd, 512, fp16, fp16, fp32, 4, 1, true);
