// Plans: built once per configuration, each looks its launcher up in the registry.
#include <memory>

#include "common.h"

namespace layerlib {

template <typename Params>
Plan<Params>::Plan(NormType norm, Stage stage, DType wtype, DType itype, int rows, int hidden,
                   int sm_count) {
  launcher_ = Registry<Params>::find(make_key(norm, stage, wtype, itype, DType::kFloat32, hidden));
  launch_params_.sm_count = sm_count;
  launch_params_.params.rows = rows;
  launch_params_.params.cols = hidden;
  launcher_(launch_params_, true);
}

template <typename Params>
void Plan<Params>::run(const Params &params, cudaStream_t stream) {
  const int ctas_per_row = launch_params_.params.ctas_per_row;
  const int ctas_per_col = launch_params_.params.ctas_per_col;
  launch_params_.params = params;
  launch_params_.params.ctas_per_row = ctas_per_row;
  launch_params_.params.ctas_per_col = ctas_per_col;
  launch_params_.stream = stream;
  launcher_(launch_params_, false);
}

template class Plan<ForwardParams>;
template class Plan<BackwardParams>;

namespace {

int sm_count() {
  int device = 0, count = 1;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "sm count");
  return count;
}

std::map<Key, std::unique_ptr<Plan<ForwardParams>>> &forward_plans() {
  static std::map<Key, std::unique_ptr<Plan<ForwardParams>>> plans;
  return plans;
}

std::map<Key, std::unique_ptr<Plan<BackwardParams>>> &backward_plans() {
  static std::map<Key, std::unique_ptr<Plan<BackwardParams>>> plans;
  return plans;
}

}  // namespace

Plan<ForwardParams> *get_forward_plan(NormType norm, Stage stage, DType wtype, DType itype, int rows,
                                      int hidden) {
  const Key key = make_key(norm, stage, wtype, itype, DType::kFloat32, hidden, rows);
  auto &plan = forward_plans()[key];
  if (!plan) {
    plan = std::make_unique<Plan<ForwardParams>>(norm, stage, wtype, itype, rows, hidden, sm_count());
  }
  return plan.get();
}

Plan<BackwardParams> *get_backward_plan(NormType norm, DType wtype, DType itype, int rows,
                                        int hidden) {
  const Key key = make_key(norm, Stage::Backward, wtype, itype, DType::kFloat32, hidden, rows);
  auto &plan = backward_plans()[key];
  if (!plan) {
    plan = std::make_unique<Plan<BackwardParams>>(norm, Stage::Backward, wtype, itype, rows, hidden,
                                                  sm_count());
  }
  return plan.get();
}

DType to_dtype(layerlib_dtype t) {
  switch (t) {
    case LAYERLIB_FLOAT32:
      return DType::kFloat32;
    case LAYERLIB_FLOAT16:
      return DType::kFloat16;
    case LAYERLIB_BFLOAT16:
      return DType::kBFloat16;
  }
  throw std::invalid_argument("layerlib: unsupported dtype");
}

}  // namespace layerlib
