// The C entry points: each finds (or builds) the plan of its configuration and runs it.
#include "common.h"

using namespace layerlib;

void layerlib_layernorm_fwd(const void *x, const void *gamma, const void *beta, void *y, float *mu,
                           float *rsigma, int rows, int cols, layerlib_dtype wtype,
                           layerlib_dtype itype, float epsilon, cudaStream_t stream) {
  ForwardParams p;
  p.rows = rows;
  p.cols = cols;
  p.x = x;
  p.gamma = gamma;
  p.beta = beta;
  p.y = y;
  p.mu = mu;
  p.rs = rsigma;
  p.epsilon = epsilon;
  get_forward_plan(NormType::LayerNorm, Stage::Forward, to_dtype(wtype), to_dtype(itype), rows, cols)
      ->run(p, stream);
}

void layerlib_layernorm_bwd(const void *dy, const void *x, const float *mu, const float *rsigma,
                           const void *gamma, void *dx, void *dgamma, void *dbeta,
                           float *dgamma_part, int rows, int cols, layerlib_dtype wtype,
                           layerlib_dtype itype, cudaStream_t stream) {
  BackwardParams p;
  p.rows = rows;
  p.cols = cols;
  p.dy = dy;
  p.x = x;
  p.mu = mu;
  p.rs = const_cast<float *>(rsigma);
  p.gamma = gamma;
  p.dx = dx;
  p.dgamma = dgamma;
  p.dbeta = dbeta;
  p.dgamma_part = dgamma_part;
  get_backward_plan(NormType::LayerNorm, to_dtype(wtype), to_dtype(itype), rows, cols)->run(p, stream);
}

void layerlib_rmsnorm_fwd(const void *x, const void *gamma, const void *add, void *y,
                         float *rsigma, int rows, int cols, layerlib_dtype wtype,
                         layerlib_dtype itype, int zero_centered_gamma, float epsilon,
                         cudaStream_t stream) {
  ForwardParams p;
  p.rows = rows;
  p.cols = cols;
  p.x = x;
  p.gamma = gamma;
  p.add = add;
  p.y = y;
  p.rs = rsigma;
  p.epsilon = epsilon;
  p.zero_centered_gamma = zero_centered_gamma != 0;
  const NormType norm = zero_centered_gamma ? NormType::RMSNormZeroCentered : NormType::RMSNorm;
  const Stage stage = add != nullptr ? Stage::ForwardAdd : Stage::Forward;
  get_forward_plan(norm, stage, to_dtype(wtype), to_dtype(itype), rows, cols)->run(p, stream);
}
