// Compile-time geometry of the norm kernels: trait classes whose member constants are used as
// template arguments and launch parameters.
#ifndef LAYERLIB_KERNEL_TRAITS_H_
#define LAYERLIB_KERNEL_TRAITS_H_

#include <cstdint>

namespace layerlib {

template <typename weight_t_, typename input_t_, typename compute_t_, typename index_t_,
          uint32_t HIDDEN_SIZE_, uint32_t THREADS_PER_CTA_>
struct TraitsBase {
  using weight_t = weight_t_;
  using input_t = input_t_;
  using compute_t = compute_t_;
  using index_t = index_t_;
  enum { HIDDEN_SIZE = HIDDEN_SIZE_ };
  enum { THREADS_PER_CTA = THREADS_PER_CTA_ };
  enum { THREADS_PER_WARP = 32 };
};

template <typename weight_t_, typename input_t_, typename compute_t_, typename index_t_,
          uint32_t HIDDEN_SIZE_, uint32_t CTAS_PER_ROW_, uint32_t WARPS_M_, uint32_t WARPS_N_,
          uint32_t BYTES_PER_LDG_ = 16,
          typename Base = TraitsBase<weight_t_, input_t_, compute_t_, index_t_, HIDDEN_SIZE_,
                                     WARPS_M_ * WARPS_N_ * 32> >
struct Kernel_traits : public Base {
  enum { CTAS_PER_ROW = CTAS_PER_ROW_ };
  enum { WARPS_M = WARPS_M_ };
  enum { WARPS_N = WARPS_N_ };
  enum { BYTES_PER_LDG = BYTES_PER_LDG_ };
  enum { NUM_ELTS = BYTES_PER_LDG / sizeof(input_t_) };
  enum { THREADS_PER_ROW = WARPS_N * Base::THREADS_PER_WARP };
  enum { SMEM_BYTES = WARPS_M * WARPS_N * 2 * sizeof(compute_t_) };
};

}  // namespace layerlib

#endif  // LAYERLIB_KERNEL_TRAITS_H_
