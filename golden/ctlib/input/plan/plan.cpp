// The plan lookup (host code).
#include "plan.h"

namespace ctlib {
namespace plan {

PlanBase *get_plan(bool use_graph) {
  static GraphPlan graph;
  return use_graph ? static_cast<PlanBase *>(&graph) : kernel_plan();
}

}  // namespace plan
}  // namespace ctlib
