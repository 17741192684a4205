// ctlib's scaling plans: one runs a kernel, one an execution graph (host code). The layout of TE's
// normalization/common.h, which its kernel units include for the plan registry.
#ifndef CTLIB_PLAN_PLAN_H_
#define CTLIB_PLAN_PLAN_H_

#include <cstddef>

#include "../common.h"
#include "../graph/graph.h"

namespace ctlib {
namespace plan {

namespace cg = ctgraph;

class PlanBase {
 public:
  virtual ~PlanBase() = default;
  virtual void run(const float *x, float *y, size_t n, float scale, cudaStream_t stream) = 0;
};

// Runs through an execution graph.
class GraphPlan : public PlanBase {
 public:
  void run(const float *x, float *y, size_t n, float scale, cudaStream_t stream) override;

 private:
  cg::Graph graph_;
};

// The plan for a backend: true for the graph (plan.cpp), false for the kernel (scale.cu).
PlanBase *get_plan(bool use_graph);
PlanBase *kernel_plan();

}  // namespace plan
}  // namespace ctlib

#endif  // CTLIB_PLAN_PLAN_H_
