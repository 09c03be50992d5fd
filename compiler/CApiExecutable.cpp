//===- CApiExecutable.cpp - the C API's evaluator, compile and run -------===//
//
// The entry points of kfuse_c.h past graph building: the float64
// evaluator, compile options and compile, executables (shapes, dumps, runs
// on device pointers and on the host, profiles), fusion checks and
// explanations, cache statistics. As in CApi.cpp, a failure records its
// message for kfuse_last_error() and returns a status.
//
//===----------------------------------------------------------------------===//

#include "compiler/CApiSupport.h"
#include "compiler/CompileGraph.h"
#include "kfuse/kfuse.h"

#include "kfuse/kfuse_c.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cstring>
#include <map>
#include <string_view>

using namespace kfuse;
using namespace kfuse::capi;

namespace {

/// Input shapes given to C as ranks and size arrays.
Expected<std::vector<std::vector<int64_t>>>
shapesOf(const int64_t *ranks, const int64_t *const *sizes, int64_t count,
         const char *what) {
  std::vector<std::vector<int64_t>> shapes;
  if (count > 0 && (!ranks || !sizes))
    return Error(ErrorCode::InvalidArgument,
                 std::string("kfuse: ") + what + ": NULL shapes");
  for (int64_t i = 0; i < count; ++i) {
    std::optional<std::vector<int64_t>> shape =
        sizesOf(ranks[i], sizes[i], what);
    if (!shape)
      return Error(ErrorCode::InvalidArgument, lastError);
    shapes.push_back(*shape);
  }
  return shapes;
}

/// Device tensors from C: inputs then outputs, in one vector.
Expected<std::vector<DeviceTensor>>
deviceTensorsOf(const kfuse_device_tensor *inputs, int64_t numInputs,
                const kfuse_device_tensor *outputs, int64_t numOutputs,
                const char *what) {
  if (numInputs < 0 || numOutputs < 0 || (numInputs > 0 && !inputs) ||
      (numOutputs > 0 && !outputs))
    return Error(ErrorCode::InvalidArgument,
                 std::string("kfuse: ") + what + ": NULL inputs or outputs");
  std::vector<DeviceTensor> tensors;
  for (int64_t i = 0; i < numInputs + numOutputs; ++i) {
    const kfuse_device_tensor &t =
        i < numInputs ? inputs[i] : outputs[i - numInputs];
    std::optional<DType> dtype = dtypeOf(t.dtype);
    std::optional<std::vector<int64_t>> shape = sizesOf(t.rank, t.sizes, what);
    if (!dtype || !shape)
      return Error(ErrorCode::InvalidArgument,
                   std::string("kfuse: ") + what + ": tensor " +
                       std::to_string(i) + " has a bad dtype or rank");
    tensors.push_back({t.data, *dtype, Dims(*shape), t.bytes});
  }
  return tensors;
}

std::string jsonText(llvm::json::Value value) {
  return llvm::formatv("{0:2}", std::move(value)).str();
}

llvm::json::Object reportJson(const testing::FusionReport &r) {
  llvm::json::Array outputs;
  for (const testing::OutputCheck &o : r.outputs)
    outputs.push_back(llvm::json::Object{{"name", o.name},
                                         {"dtype", dtypeName(o.dtype)},
                                         {"fused_error", o.fusedError},
                                         {"unfused_error", o.unfusedError},
                                         {"tolerance", o.tolerance},
                                         {"passed", o.passed}});
  return llvm::json::Object{
      {"passed", r.passed()},
      {"values_match", r.valuesMatch},
      {"fused_not_slower", r.fusedNotSlower},
      {"seed", static_cast<int64_t>(r.seed)},
      {"fused_kernels", static_cast<int64_t>(r.fusedKernels)},
      {"unfused_kernels", static_cast<int64_t>(r.unfusedKernels)},
      {"fused_ms", r.fusedMs},
      {"unfused_ms", r.unfusedMs},
      {"outputs", std::move(outputs)},
      {"summary", r.summary()}};
}

std::optional<Stage> stageOf(const char *name) {
  static const std::map<std::string, Stage> stages = {{"graph", Stage::Graph},
                                                      {"fused", Stage::Fused},
                                                      {"gpu", Stage::GPU},
                                                      {"llvm", Stage::LLVM},
                                                      {"ptx", Stage::PTX}};
  auto it = name ? stages.find(name) : stages.end();
  if (it == stages.end())
    return std::nullopt;
  return it->second;
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Host tensors and the evaluator
//===----------------------------------------------------------------------===//

kfuse_status kfuse_evaluate(kfuse_graph graph, const kfuse_host_tensor *inputs,
                            int64_t num_inputs, kfuse_host_tensor *outputs,
                            int64_t num_outputs) {
  if (!graph || (num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
    return fail("kfuse_evaluate: NULL graph, inputs or outputs");
  Expected<std::vector<HostTensor>> in = hostTensorsOf(inputs, num_inputs);
  if (!in)
    return fail(in.error());
  Expected<std::vector<HostTensor>> out = evaluate(graph->graph, *in);
  if (!out)
    return fail(out.error());
  return writeHostTensors(*out, outputs, num_outputs);
}

void kfuse_host_tensor_free(kfuse_host_tensor *tensor) {
  if (!tensor)
    return;
  std::free(tensor->data);
  std::free(const_cast<int64_t *>(tensor->sizes));
  *tensor = {nullptr, KFUSE_F32, 0, nullptr};
}

//===----------------------------------------------------------------------===//
// Compiling and running
//===----------------------------------------------------------------------===//

kfuse_compile_options kfuse_default_compile_options(void) {
  CompileOptions d;
  return {nullptr,   d.fusion == Fusion::Unfused,
          d.padRows, d.allowTF32,
          d.splitK,  d.diskCache,
          nullptr,   KFUSE_LAUNCH_AUTO,
          nullptr,   d.splitKeys,
          d.deterministic, d.attentionGradTma};
}

kfuse_status kfuse_compile(kfuse_graph graph,
                           const kfuse_compile_options *options,
                           kfuse_executable *out) {
  if (!graph || !out)
    return fail("kfuse_compile: graph and out must not be NULL");
  kfuse_compile_options c =
      options ? *options : kfuse_default_compile_options();
  CompileOptions o;
  if (c.arch)
    o.arch = c.arch;
  o.fusion = c.unfused ? Fusion::Unfused : Fusion::Fused;
  o.padRows = c.pad_rows != 0;
  o.allowTF32 = c.allow_tf32 != 0;
  o.splitK = c.split_k != 0;
  o.splitKeys = c.split_keys != 0;
  o.deterministic = c.deterministic != 0;
  o.attentionGradTma = c.attention_grad_tma != 0;
  o.diskCache = c.disk_cache != 0;
  if (c.cache_dir)
    o.cacheDir = c.cache_dir;
  for (std::string_view rest = c.dynamic_dims ? c.dynamic_dims : "";
       !rest.empty();) {
    size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    if (name.empty())
      return fail("kfuse_compile: dynamic_dims '" +
                  std::string(c.dynamic_dims) + "' has an empty name");
    o.dynamicDims.emplace_back(name);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      return fail("kfuse_compile: dynamic_dims '" +
                  std::string(c.dynamic_dims) + "' ends in a comma");
  }
  switch (c.launch) {
  case KFUSE_LAUNCH_AUTO:
    o.launch = Launch::Auto;
    break;
  case KFUSE_LAUNCH_KERNELS:
    o.launch = Launch::Kernels;
    break;
  case KFUSE_LAUNCH_GRAPH:
    o.launch = Launch::Graph;
    break;
  default:
    return fail("kfuse_compile: launch is " + std::to_string(c.launch) +
                "; it must be KFUSE_LAUNCH_AUTO, _KERNELS or _GRAPH");
  }
  Expected<Executable> exe = Compiler(o).compile(graph->graph);
  if (!exe)
    return fail(exe.error());
  *out = new kfuse_executable_t{exe.take()};
  return KFUSE_OK;
}

void kfuse_executable_destroy(kfuse_executable exe) { delete exe; }

int64_t kfuse_executable_num_inputs(kfuse_executable exe) {
  return exe ? static_cast<int64_t>(exe->exe.numInputs()) : -1;
}

int64_t kfuse_executable_num_outputs(kfuse_executable exe) {
  return exe ? static_cast<int64_t>(exe->exe.numOutputs()) : -1;
}

kfuse_status kfuse_executable_output_shapes(kfuse_executable exe,
                                            const int64_t *input_ranks,
                                            const int64_t *const *input_sizes,
                                            int64_t num_inputs, int64_t *ranks,
                                            int64_t *sizes,
                                            int64_t num_outputs) {
  if (!exe || !ranks || !sizes)
    return fail("kfuse_executable_output_shapes: NULL argument");
  Expected<std::vector<std::vector<int64_t>>> shapes = shapesOf(
      input_ranks, input_sizes, num_inputs, "kfuse_executable_output_shapes");
  if (!shapes)
    return fail(shapes.error());
  Expected<std::vector<std::vector<int64_t>>> out =
      exe->exe.outputShapes(*shapes);
  if (!out)
    return fail(out.error());
  if (static_cast<int64_t>(out->size()) != num_outputs)
    return fail("kfuse_executable_output_shapes: the graph has " +
                std::to_string(out->size()) + " outputs, not " +
                std::to_string(num_outputs));
  for (size_t i = 0; i < out->size(); ++i) {
    ranks[i] = static_cast<int64_t>((*out)[i].size());
    std::copy((*out)[i].begin(), (*out)[i].end(), sizes + Dims::kMaxRank * i);
  }
  return KFUSE_OK;
}

kfuse_status kfuse_executable_specializations(kfuse_executable exe,
                                              char **json) {
  if (!exe || !json)
    return fail("kfuse_executable_specializations: NULL argument");
  llvm::json::Array list;
  for (const SpecializationInfo &s : exe->exe.specializations()) {
    llvm::json::Array shapes;
    for (const std::vector<int64_t> &shape : s.shapes)
      shapes.push_back(llvm::json::Array(shape));
    list.push_back(llvm::json::Object{{"shapes", std::move(shapes)},
                                      {"runtime_sizes", s.runtimeSizes},
                                      {"reason", s.reason}});
  }
  *json = copyString(
      llvm::formatv("{0}", llvm::json::Value(std::move(list))).str());
  return KFUSE_OK;
}

kfuse_status kfuse_executable_dump(kfuse_executable exe, const char *stage,
                                   char **text) {
  std::optional<Stage> which = stageOf(stage);
  if (!exe || !text || !which)
    return fail("kfuse_executable_dump: needs an executable and a stage of "
                "graph, fused, gpu, llvm or ptx, got '" +
                std::string(stage ? stage : "") + "'");
  Expected<std::string> dumped = exe->exe.dump(*which);
  if (!dumped)
    return fail(dumped.error());
  *text = copyString(*dumped);
  return KFUSE_OK;
}

kfuse_status kfuse_run(kfuse_executable exe, const kfuse_device_tensor *inputs,
                       int64_t num_inputs, const kfuse_device_tensor *outputs,
                       int64_t num_outputs, void *stream) {
  if (!exe)
    return fail("kfuse_run: the executable is NULL");
  Expected<std::vector<DeviceTensor>> tensors =
      deviceTensorsOf(inputs, num_inputs, outputs, num_outputs, "kfuse_run");
  if (!tensors)
    return fail(tensors.error());
  return finish(exe->exe.run(tensors->data(), num_inputs,
                             tensors->data() + num_inputs, num_outputs,
                             stream));
}

kfuse_status kfuse_profile(kfuse_executable exe,
                           const kfuse_device_tensor *inputs,
                           int64_t num_inputs,
                           const kfuse_device_tensor *outputs,
                           int64_t num_outputs, int repetitions, char **json) {
  if (!exe || !json || repetitions < 1)
    return fail("kfuse_profile: needs an executable, json and repetitions "
                ">= 1");
  Expected<std::vector<DeviceTensor>> tensors = deviceTensorsOf(
      inputs, num_inputs, outputs, num_outputs, "kfuse_profile");
  if (!tensors)
    return fail(tensors.error());
  Expected<std::vector<KernelProfile>> profile =
      exe->exe.profile(tensors->data(), num_inputs,
                       tensors->data() + num_inputs, num_outputs, repetitions);
  if (!profile)
    return fail(profile.error());
  llvm::json::Array kernels;
  for (const KernelProfile &k : *profile)
    kernels.push_back(
        llvm::json::Object{{"name", k.name},
                           {"ms", k.ms},
                           {"bytes", static_cast<int64_t>(k.bytes)},
                           {"flops", static_cast<int64_t>(k.flops)},
                           {"gb_per_s", k.gbPerSecond},
                           {"tflop_per_s", k.tflopPerSecond},
                           {"bound", k.bound},
                           {"roofline_fraction", k.rooflineFraction}});
  *json = copyString(jsonText(std::move(kernels)));
  return KFUSE_OK;
}

kfuse_status kfuse_check_fusion(kfuse_graph graph, const int64_t *input_ranks,
                                const int64_t *const *input_sizes,
                                int64_t num_inputs, uint64_t seed,
                                int64_t reduction_length, int allow_tf32,
                                int time, char **json) {
  if (!graph || !json)
    return fail("kfuse_check_fusion: graph and json must not be NULL");
  Expected<std::vector<std::vector<int64_t>>> shapes =
      shapesOf(input_ranks, input_sizes, num_inputs, "kfuse_check_fusion");
  if (!shapes)
    return fail(shapes.error());
  testing::CheckOptions options;
  options.shapes = *shapes;
  options.seed = seed;
  options.reductionLength = reduction_length;
  options.allowTF32 = allow_tf32 != 0;
  options.time = time != 0;
  Expected<testing::FusionReport> report =
      testing::checkFusion(graph->graph, options);
  if (!report)
    return fail(report.error());
  *json = copyString(jsonText(reportJson(*report)));
  return KFUSE_OK;
}

kfuse_cache_stats kfuse_get_cache_stats(void) {
  CacheStats stats = cacheStats();
  return {stats.compiles, stats.memoryHits, stats.diskHits, stats.diskRejected};
}

kfuse_status kfuse_run_host(kfuse_executable exe,
                            const kfuse_host_tensor *inputs, int64_t num_inputs,
                            kfuse_host_tensor *outputs, int64_t num_outputs) {
  if (!exe || (num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
    return fail("kfuse_run_host: NULL executable, inputs or outputs");
  Expected<std::vector<HostTensor>> in = hostTensorsOf(inputs, num_inputs);
  if (!in)
    return fail(in.error());
  Expected<std::vector<HostTensor>> out = exe->exe.runOnHost(*in);
  if (!out)
    return fail(out.error());
  return writeHostTensors(*out, outputs, num_outputs);
}

kfuse_status kfuse_explain_fusion(kfuse_graph graph, int unfused, int json,
                                  char **text) {
  if (!graph || !text)
    return fail("kfuse_explain_fusion: graph and text must not be NULL");
  Expected<std::string> mlir = graph->graph.toMLIR();
  if (!mlir)
    return fail(mlir.error());
  compiler::CompileRequest request;
  request.graphText = *mlir;
  request.fused = !unfused;
  Expected<std::string> explanation =
      compiler::explainFusion(request, json != 0);
  if (!explanation)
    return fail(explanation.error());
  *text = copyString(*explanation);
  return KFUSE_OK;
}

} // extern "C"
