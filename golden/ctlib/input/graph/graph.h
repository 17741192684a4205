// ctlib's execution graphs: a host-only API with a long parse (the place a vendor library's graph
// frontend holds in TE's normalization units).
#ifndef CTLIB_GRAPH_GRAPH_H_
#define CTLIB_GRAPH_GRAPH_H_

#include <map>
#include <string>

// NOTE: shows in a build log when one of nvcc's device passes parses this header
// (tests/apply/test_device_pass.py reads it there).
#ifdef __CUDA_ARCH__
#warning "graph/graph.h parsed in a device pass"
#endif

namespace ctgraph {

class Graph {
 public:
  void add(const std::string &op) { ++ops_[op]; }
  size_t size() const { return ops_.size(); }

 private:
  std::map<std::string, int> ops_;
};

}  // namespace ctgraph

#endif  // CTLIB_GRAPH_GRAPH_H_
