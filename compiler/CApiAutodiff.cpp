//===- CApiAutodiff.cpp - the C API's reverse mode ------------------------===//
//
// kfuse_graph_vjp and kfuse_graph_grad over kfuse/Autodiff.h: the joint
// forward-and-backward graph comes back as a new graph handle.
//
//===----------------------------------------------------------------------===//

#include "compiler/CApiSupport.h"

using namespace kfuse;
using namespace kfuse::capi;

namespace {

/// `count` names from C, or nullopt (and the error) for a NULL one.
std::optional<std::vector<std::string>>
namesOf(const char *const *names, int64_t count, const char *what) {
  std::vector<std::string> out;
  if (count < 0 || (count > 0 && !names)) {
    fail(std::string(what) + ": " + std::to_string(count) +
         " names and no array of them");
    return std::nullopt;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (!names[i]) {
      fail(std::string(what) + ": name " + std::to_string(i) + " is NULL");
      return std::nullopt;
    }
    out.push_back(names[i]);
  }
  return out;
}

kfuse_status handOut(Expected<Graph> joint, kfuse_graph *out) {
  if (!joint)
    return fail(joint.error());
  *out = new kfuse_graph_t{joint.take(), {}, {}};
  return KFUSE_OK;
}

} // namespace

extern "C" {

kfuse_status kfuse_graph_vjp(kfuse_graph graph, const char *const *outputs,
                             int64_t num_outputs, const char *const *wrt,
                             int64_t num_wrt, kfuse_graph *out) {
  if (!graph || !out)
    return fail("kfuse_graph_vjp: graph and out must not be NULL");
  std::optional<std::vector<std::string>> ys =
      namesOf(outputs, num_outputs, "kfuse_graph_vjp");
  if (!ys)
    return KFUSE_INVALID_ARGUMENT;
  std::optional<std::vector<std::string>> xs =
      namesOf(wrt, num_wrt, "kfuse_graph_vjp");
  if (!xs)
    return KFUSE_INVALID_ARGUMENT;
  return handOut(vjp(graph->graph, {*ys, *xs}), out);
}

kfuse_status kfuse_graph_grad(kfuse_graph graph, const char *loss,
                              const char *const *wrt, int64_t num_wrt,
                              kfuse_graph *out) {
  if (!graph || !loss || !out)
    return fail("kfuse_graph_grad: graph, loss and out must not be NULL");
  std::optional<std::vector<std::string>> xs =
      namesOf(wrt, num_wrt, "kfuse_graph_grad");
  if (!xs)
    return KFUSE_INVALID_ARGUMENT;
  return handOut(grad(graph->graph, loss, *xs), out);
}

} // extern "C"
