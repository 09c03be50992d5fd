//===- CApiAutodiff.cpp - the C API's reverse mode ------------------------===//
//
// kfuse_graph_vjp and kfuse_graph_grad over kfuse/Autodiff.h: the joint
// forward-and-backward graph comes back as a new graph handle;
// kfuse_graph_split_vjp hands out splitVJP's two graphs and its plan as
// JSON.
//
//===----------------------------------------------------------------------===//

#include "compiler/CApiSupport.h"

#include "llvm/Support/JSON.h"

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

/// splitVJP's backward inputs and decisions as a JSON object.
std::string planJson(const TrainingGraphs &split) {
  static const char *const kSources[] = {"input", "output", "saved",
                                         "cotangent"};
  llvm::json::Array inputs, decisions;
  for (const BackwardInput &in : split.backwardInputs)
    inputs.push_back(llvm::json::Array{
        kSources[static_cast<int>(in.source)], int64_t(in.index)});
  for (const std::string &line : split.decisions)
    decisions.push_back(line);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(llvm::json::Object{
      {"backward_inputs", std::move(inputs)},
      {"decisions", std::move(decisions)}});
  return text;
}

} // namespace

extern "C" {

kfuse_status kfuse_graph_split_vjp(kfuse_graph graph,
                                   const char *const *outputs,
                                   int64_t num_outputs,
                                   const char *const *wrt, int64_t num_wrt,
                                   kfuse_graph *forward, kfuse_graph *backward,
                                   char **plan) {
  if (!graph || !forward || !backward || !plan)
    return fail("kfuse_graph_split_vjp: graph, forward, backward and plan "
                "must not be NULL");
  std::optional<std::vector<std::string>> ys =
      namesOf(outputs, num_outputs, "kfuse_graph_split_vjp");
  if (!ys)
    return KFUSE_INVALID_ARGUMENT;
  std::optional<std::vector<std::string>> xs =
      namesOf(wrt, num_wrt, "kfuse_graph_split_vjp");
  if (!xs)
    return KFUSE_INVALID_ARGUMENT;
  Expected<TrainingGraphs> split = splitVJP(graph->graph, {*ys, *xs});
  if (!split)
    return fail(split.error());
  *plan = copyString(planJson(*split));
  *forward = new kfuse_graph_t{std::move(split->forward), {}, {}};
  *backward = new kfuse_graph_t{std::move(split->backward), {}, {}};
  return KFUSE_OK;
}

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
