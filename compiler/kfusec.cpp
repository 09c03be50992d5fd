//===- kfusec.cpp - the kfuse compiler driver -----------------------------===//
//
//   kfusec FILE.mlir [--emit=graph] [--shape x=128x64] [--bind M=128]
//   kfusec FILE.mlir --eval --seed 7
//
// Reads a kf graph, runs the pipeline up to the requested stage and prints
// the IR; --eval runs the reference evaluator on random inputs and prints a
// summary per output. MLIR's --mlir-print-ir-after-all and friends apply.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompileGraph.h"
#include "kfuse/kfuse.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <memory>
#include <set>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

/// What --emit prints: a compiler stage, or SASS (ptxas + cuobjdump).
enum class Emit { Graph, Fused, GPU, LLVM, PTX, SASS };

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"),
                               cl::Required);
cl::opt<Emit> emit(
    "emit", cl::desc("The stage to print"),
    cl::values(
        clEnumValN(Emit::Graph, "graph",
                   "kf graph IR after kf-specialize, canonicalize and cse"),
        clEnumValN(Emit::Fused, "fused",
                   "kf IR in kf.kernel regions with their launches and tilings"),
        clEnumValN(Emit::GPU, "gpu", "the gpu.module of kernels"),
        clEnumValN(Emit::LLVM, "llvm", "optimised LLVM IR"),
        clEnumValN(Emit::PTX, "ptx", "PTX"),
        clEnumValN(Emit::SASS, "sass",
                   "SASS, through ptxas and cuobjdump from the CUDA toolkit")),
    cl::init(Emit::Graph));
cl::opt<std::string> arch("arch", cl::desc("Target GPU, e.g. sm_90, sm_80"),
                          cl::init("sm_90"));
cl::opt<bool> unfused("unfused",
                      cl::desc("One kernel per op (the unfused baseline)"));
cl::opt<bool> noPad("no-pad",
                    cl::desc("Keep intermediate buffers dense (no kf-pad)"));
cl::opt<bool> allowTF32(
    "allow-tf32",
    cl::desc("f32 matmuls may run on tensor cores in TF32 (about 1e-3 "
             "relative error)"));
cl::opt<bool> noSplitK("no-split-k",
                       cl::desc("Keep every matmul's K in one kernel (no "
                                "kf-split-k)"));
cl::opt<bool> noSplitKeys(
    "no-split-keys",
    cl::desc("Keep attentions with few query tiles over all their keys in "
             "one pass (no kf-split-keys, flash-decoding)"));
cl::opt<bool> nondeterministic(
    "nondeterministic",
    cl::desc("Kernels may add partial results with atomics, in any order "
             "(kf-atomic-dq: FlashAttention's backward adds up dq in its key "
             "blocks)"));
cl::opt<bool> gradTma(
    "grad-tma",
    cl::desc("FlashAttention's backward copies its tiles with the TMA from a "
             "warpgroup of its own (CompileOptions::attentionGradTma)"),
    cl::init(true));
cl::list<std::string> shapeArgs("shape",
                                cl::desc("An input's shape, NAME=128x64"));
cl::list<std::string> bindArgs("bind",
                               cl::desc("A symbolic dim's size, NAME=SIZE"));
cl::opt<bool> evalFlag("eval", cl::desc("Run the reference evaluator on random "
                                        "inputs and summarise each output"));
cl::opt<bool> runFlag("run",
                      cl::desc("Run fused and unfused on the GPU on random "
                               "inputs and check each against the reference "
                               "evaluator (says so and succeeds without a "
                               "GPU)"));
cl::opt<bool> profileFlag(
    "profile",
    cl::desc("Run on the GPU on random inputs and place every kernel on the "
             "roofline: bytes, FLOPs, time, GB/s, TFLOP/s, bound, fraction"));
cl::opt<bool> explainFlag(
    "explain-fusion",
    cl::desc("Print, for every producer-consumer edge, whether kf-fuse fused "
             "it and why"));
cl::opt<bool> jsonFlag("json", cl::desc("--explain-fusion as JSON"));
cl::opt<bool> trainingFlag(
    "training",
    cl::desc("Differentiate every float output with respect to every float "
             "input and split the result into a forward that saves and a "
             "backward that recomputes (kfuse::splitVJP): --explain-fusion "
             "first says, for each forward value the backward reads, whether "
             "it is saved or recomputed and why, then explains each graph; "
             "--emit prints each graph's stage, the forward first. Sizes "
             "through --bind"));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random inputs"),
                       cl::init(1));

int fail(const llvm::Twine &message) {
  llvm::errs() << "kfusec: " << message << "\n";
  return 1;
}

/// The concrete shape of every input: from --shape, else the declared
/// type with symbols resolved through --bind.
kfuse::Expected<std::vector<std::vector<int64_t>>>
inputShapes(const kfuse::Graph &graph) {
  std::map<std::string, std::string> given, bound;
  for (auto *list : {&shapeArgs, &bindArgs})
    for (const std::string &arg : *list) {
      size_t eq = arg.find('=');
      if (eq == std::string::npos || eq == 0)
        return kfuse::Error(kfuse::ErrorCode::InvalidArgument,
                            "expected NAME=VALUE, got '" + arg + "'");
      (list == &shapeArgs ? given : bound)[arg.substr(0, eq)] =
          arg.substr(eq + 1);
    }
  std::vector<kfuse::TensorInfo> infos = graph.inputs();
  std::set<std::string> symbols;
  for (const kfuse::TensorInfo &info : infos)
    for (const kfuse::Dim &d : info.shape)
      if (d.isSymbolic())
        symbols.insert(d.symbol());
  for (const auto &entry : bound)
    if (!symbols.count(entry.first))
      return kfuse::Error(kfuse::ErrorCode::InvalidArgument,
                          "--bind names no symbolic dim '" + entry.first +
                              "' (the graph's: " +
                              (symbols.empty() ? std::string("none")
                                               : llvm::join(symbols, ", ")) +
                              ")");
  for (const auto &entry : given)
    if (llvm::none_of(infos, [&](const kfuse::TensorInfo &info) {
          return info.name == entry.first;
        }))
      return kfuse::Error(kfuse::ErrorCode::InvalidArgument,
                          "--shape names no input '" + entry.first + "'");
  std::vector<std::vector<int64_t>> shapes;
  for (const kfuse::TensorInfo &info : infos) {
    std::vector<int64_t> shape;
    if (auto it = given.find(info.name); it != given.end()) {
      llvm::SmallVector<llvm::StringRef> dims;
      llvm::StringRef(it->second).split(dims, 'x', -1, false);
      for (llvm::StringRef d : dims) {
        int64_t size;
        if (d.getAsInteger(10, size) || size < 0)
          return kfuse::Error(kfuse::ErrorCode::InvalidArgument,
                              "bad shape '" + it->second + "' for input '" +
                                  info.name + "'");
        shape.push_back(size);
      }
    } else {
      for (const kfuse::Dim &d : info.shape) {
        int64_t size = d.size();
        if (d.isSymbolic() &&
            (!bound.count(d.symbol()) ||
             llvm::StringRef(bound[d.symbol()]).getAsInteger(10, size)))
          return kfuse::Error(kfuse::ErrorCode::InvalidArgument,
                              "input '" + info.name + "' is " +
                                  kfuse::shapeString(info.shape) +
                                  ": give --shape " + info.name +
                                  "=... or --bind " + d.symbol() + "=...");
        shape.push_back(size);
      }
    }
    shapes.push_back(shape);
  }
  return shapes;
}

void printSummary(const std::string &name, const kfuse::HostTensor &t) {
  double lo = INFINITY, hi = -INFINITY, sum = 0, sumSq = 0;
  size_t nans = 0, infs = 0;
  for (size_t i = 0; i < t.numElements(); ++i) {
    double v = t.get(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    if (std::isinf(v))
      ++infs;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sumSq += v * v;
  }
  std::string shape;
  for (int64_t d : t.shape())
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
  double n = static_cast<double>(t.numElements());
  llvm::outs() << llvm::format(
      "%s: %s %s  min %.6g  max %.6g  mean %.6g  l2 %.6g  nan %zu  inf %zu\n",
      name.c_str(), kfuse::dtypeName(t.dtype()),
      shape.empty() ? "scalar" : shape.c_str(), lo, hi, n ? sum / n : 0.0,
      std::sqrt(sumSq), nans, infs);
}

/// Random inputs (of --seed) in the shapes of the command line.
kfuse::Expected<std::vector<kfuse::HostTensor>>
randomInputs(const kfuse::Graph &graph) {
  auto shapes = inputShapes(graph);
  if (!shapes)
    return shapes.error();
  std::vector<kfuse::HostTensor> inputs;
  std::vector<kfuse::TensorInfo> infos = graph.inputs();
  for (size_t i = 0; i < infos.size(); ++i)
    inputs.push_back(
        kfuse::HostTensor::random(infos[i].dtype, (*shapes)[i], seed + i));
  return inputs;
}

int runEvaluator(const kfuse::Graph &graph) {
  auto inputs = randomInputs(graph);
  if (!inputs)
    return fail(inputs.error().message());
  auto outputs = kfuse::evaluate(graph, *inputs);
  if (!outputs)
    return fail(outputs.error().message());
  std::vector<kfuse::TensorInfo> outInfos = graph.outputs();
  for (size_t i = 0; i < outputs->size(); ++i)
    printSummary(outInfos[i].name, (*outputs)[i]);
  return 0;
}

/// PTX -> cubin with ptxas, then cuobjdump -sass.
int printSASS(const std::string &ptx) {
  const char *home = std::getenv("CUDA_HOME");
  std::string bin = std::string(home ? home : "/usr/local/cuda") + "/bin/";
  auto ptxas = llvm::sys::findProgramByName("ptxas", {bin});
  auto cuobjdump = llvm::sys::findProgramByName("cuobjdump", {bin});
  if (!ptxas || !cuobjdump)
    return fail("--emit=sass needs ptxas and cuobjdump from the CUDA "
                "toolkit; set CUDA_HOME");
  llvm::SmallString<128> ptxPath, cubinPath;
  llvm::sys::fs::createTemporaryFile("kfusec", "ptx", ptxPath);
  llvm::sys::fs::createTemporaryFile("kfusec", "cubin", cubinPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    os << ptx;
  }
  // wgmma kernels are written for sm_90a, whatever --arch said.
  std::string archFlag = "-arch=" + kfuse::ptxTarget(ptx);
  llvm::StringRef ptxasArgs[] = {*ptxas, archFlag, ptxPath, "-o", cubinPath};
  llvm::StringRef dumpArgs[] = {*cuobjdump, "-sass", cubinPath};
  int rc = llvm::sys::ExecuteAndWait(*ptxas, ptxasArgs);
  if (rc == 0)
    rc = llvm::sys::ExecuteAndWait(*cuobjdump, dumpArgs);
  llvm::sys::fs::remove(ptxPath);
  llvm::sys::fs::remove(cubinPath);
  return rc == 0 ? 0 : fail("ptxas or cuobjdump failed");
}

/// Relative-error bound for an output of `dtype` (reductions included).
double toleranceFor(kfuse::DType dtype) {
  switch (dtype) {
  case kfuse::DType::f32:
    // TF32 products keep 10 of f32's 23 mantissa bits.
    return allowTF32 ? 5e-3 : 1e-4;
  case kfuse::DType::f16:
    return 5e-3;
  case kfuse::DType::bf16:
    return 2e-2;
  default:
    return 0;
  }
}

int profileOnGPU(const kfuse::Graph &graph) {
  kfuse::Expected<kfuse::DeviceInfo> gpu = kfuse::device();
  if (!gpu) {
    llvm::outs() << "not profiled: " << gpu.error().message() << "\n";
    return 0;
  }
  auto inputs = randomInputs(graph);
  if (!inputs)
    return fail(inputs.error().message());
  std::vector<std::vector<int64_t>> shapes;
  std::vector<kfuse::DeviceBuffer> buffers;
  std::vector<kfuse::DeviceTensor> in, out;
  for (const kfuse::HostTensor &t : *inputs) {
    shapes.push_back(t.shape());
    auto b = kfuse::DeviceBuffer::fromHost(t);
    if (!b)
      return fail(b.error().message());
    in.push_back(b->tensor(t.dtype(), kfuse::Dims(t.shape())));
    buffers.push_back(b.take());
  }
  kfuse::CompileOptions options;
  options.fusion = unfused ? kfuse::Fusion::Unfused : kfuse::Fusion::Fused;
  options.padRows = !noPad;
  options.allowTF32 = allowTF32;
  options.splitK = !noSplitK;
  options.splitKeys = !noSplitKeys;
  options.deterministic = !nondeterministic;
  options.attentionGradTma = gradTma;
  options.arch = arch;
  auto exe = kfuse::Compiler(options).compile(graph);
  if (!exe)
    return fail(exe.error().message());
  auto outputShapes = exe->outputShapes(shapes);
  if (!outputShapes)
    return fail(outputShapes.error().message());
  std::vector<kfuse::TensorInfo> outInfos = graph.outputs();
  for (size_t i = 0; i < outInfos.size(); ++i) {
    uint64_t bytes = kfuse::dtypeSize(outInfos[i].dtype);
    for (int64_t d : (*outputShapes)[i])
      bytes *= d;
    auto b = kfuse::DeviceBuffer::allocate(bytes);
    if (!b)
      return fail(b.error().message());
    out.push_back(
        b->tensor(outInfos[i].dtype, kfuse::Dims((*outputShapes)[i])));
    buffers.push_back(b.take());
  }
  auto profile = exe->profile(in.data(), in.size(), out.data(), out.size());
  if (!profile)
    return fail(profile.error().message());
  llvm::outs() << llvm::format("%-24s %10s %12s %12s %8s %9s %9s %-16s %6s\n",
                               "kernel", "ms", "bytes", "flops", "flop/B",
                               "GB/s", "TFLOP/s", "bound", "roof");
  double total = 0;
  for (const kfuse::KernelProfile &k : *profile) {
    total += k.ms;
    llvm::outs() << llvm::format(
        "%-24s %10.4f %12llu %12llu %8.2f %9.1f %9.3f %-16s %5.0f%%\n",
        k.name.c_str(), k.ms, (unsigned long long)k.bytes,
        (unsigned long long)k.flops, k.bytes ? double(k.flops) / k.bytes : 0.0,
        k.gbPerSecond, k.tflopPerSecond, k.bound.c_str(),
        k.rooflineFraction * 100);
  }
  llvm::outs() << llvm::format("%zu kernels, %.4f ms on %s\n", profile->size(),
                               total, gpu->name.c_str());
  return 0;
}

int runOnGPU(const kfuse::Graph &graph) {
  kfuse::Expected<kfuse::DeviceInfo> gpu = kfuse::device();
  if (!gpu) {
    llvm::outs() << "not run: " << gpu.error().message() << "\n";
    return 0;
  }
  auto randoms = randomInputs(graph);
  if (!randoms)
    return fail(randoms.error().message());
  const std::vector<kfuse::HostTensor> &inputs = *randoms;
  std::vector<std::vector<int64_t>> shapes;
  for (const kfuse::HostTensor &t : inputs)
    shapes.push_back(t.shape());
  auto reference = kfuse::evaluate(graph, inputs);
  if (!reference)
    return fail(reference.error().message());
  std::vector<kfuse::TensorInfo> outputs = graph.outputs();
  bool ok = true;
  for (kfuse::Fusion fusion : {kfuse::Fusion::Fused, kfuse::Fusion::Unfused}) {
    kfuse::CompileOptions options;
    options.fusion = fusion;
    options.arch = arch;
    auto exe = kfuse::Compiler(options).compile(graph);
    if (!exe)
      return fail(exe.error().message());
    auto results = exe->runOnHost(inputs);
    if (!results)
      return fail(results.error().message());
    auto kernels = exe->kernels(shapes);
    for (size_t i = 0; i < outputs.size(); ++i) {
      double error = kfuse::relativeError((*results)[i], (*reference)[i]);
      double tol = toleranceFor(outputs[i].dtype);
      bool pass = error <= tol;
      ok &= pass;
      llvm::outs() << llvm::format(
          "%s on %s (%zu kernels): %s relative error %.3g (tolerance %.1g) "
          "%s\n",
          fusion == kfuse::Fusion::Fused ? "fused" : "unfused",
          gpu->name.c_str(), kernels ? kernels->size() : 0,
          outputs[i].name.c_str(), error, tol, pass ? "PASS" : "FAIL");
    }
  }
  return ok ? 0 : 1;
}

/// --explain-fusion, or the --emit stage of the graph's compile.
int compileAndPrint(const kfuse::Graph &graph) {
  std::vector<std::vector<int64_t>> shapes;
  if (emit != Emit::Graph || !shapeArgs.empty() || !bindArgs.empty()) {
    auto resolved = inputShapes(graph);
    if (!resolved)
      return fail(resolved.error().message());
    shapes = *resolved;
  }
  kfuse::Expected<std::string> text = graph.toMLIR();
  if (!text)
    return fail(text.error().message());
  kfuse::compiler::CompileRequest request;
  request.graphText = *text;
  request.shapes = shapes;
  request.fused = !unfused;
  if (explainFlag) {
    auto explanation = kfuse::compiler::explainFusion(request, jsonFlag);
    if (!explanation)
      return fail(explanation.error().message());
    llvm::outs() << *explanation;
    return 0;
  }
  request.arch = arch;
  request.padRows = !noPad;
  request.allowTF32 = allowTF32;
  request.splitK = !noSplitK;
  request.splitKeys = !noSplitKeys;
  request.deterministic = !nondeterministic;
  request.attentionGradTma = gradTma;
  request.stopAfter = emit == Emit::SASS
                          ? kfuse::Stage::PTX
                          : static_cast<kfuse::Stage>(emit.getValue());
  bool badOptions = false;
  request.configure = [&](PassManager &pm) {
    badOptions |= failed(applyPassManagerCLOptions(pm));
    applyDefaultTimingPassManagerCLOptions(pm);
  };
  auto plan = kfuse::compiler::compileGraph(request);
  if (badOptions)
    return fail("bad pass-manager options");
  if (!plan)
    return fail(plan.error().message());
  if (emit == Emit::PTX)
    llvm::outs() << plan->ptx;
  else if (emit == Emit::SASS)
    return printSASS(plan->ptx);
  else
    llvm::outs() << plan->dumps[kfuse::compiler::stageName(request.stopAfter)]
                 << "\n";
  return 0;
}

/// --training: the forward and backward of splitVJP, each compiled and
/// printed as compileAndPrint does, after the save-or-recompute decisions.
int compileTrainingGraphs(const kfuse::Graph &graph) {
  if (!shapeArgs.empty())
    return fail("--training takes sizes through --bind (the backward's "
                "inputs are not the forward's), not --shape");
  kfuse::Expected<kfuse::TrainingGraphs> split = kfuse::splitVJP(graph);
  if (!split)
    return fail(split.error().message());
  bool explainJson = explainFlag && jsonFlag;
  if (explainFlag) {
    if (explainJson) {
      llvm::json::Array decisions;
      for (const std::string &line : split->decisions)
        decisions.push_back(line);
      llvm::outs() << "{\"decisions\": "
                   << llvm::json::Value(std::move(decisions)) << ",\n";
    } else {
      llvm::outs() << "// save or recompute, for each forward value the "
                      "backward reads:\n";
      for (const std::string &line : split->decisions)
        llvm::outs() << line << "\n";
    }
  }
  for (auto [name, part] : {std::pair{"forward", &split->forward},
                            std::pair{"backward", &split->backward}}) {
    llvm::outs() << (explainJson ? std::string("\"") + name + "\": "
                                 : std::string("// ") + name + "\n");
    llvm::outs().flush();
    if (int rc = compileAndPrint(*part))
      return rc;
    if (explainJson)
      llvm::outs() << (std::string(name) == "forward" ? ",\n" : "}\n");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // --mlir-timing: each MLIR pass's wall time (issue 30's breakdown; the
  // LLVM side has LLVM's own --time-passes).
  registerDefaultTimingManagerCLOptions();
  // kfusec's own options are what --help shows; MLIR's printing options
  // (--mlir-print-ir-after-all, ...) and LLVM's still apply, unlisted.
  cl::OptionCategory kfuseOptions("kfusec options");
  cl::Option *own[] = {&inputFile,
                       &emit,
                       &arch,
                       &unfused,
                       &noPad,
                       &allowTF32,
                       &noSplitK,
                       &noSplitKeys,
                       &nondeterministic,
                       &gradTma,
                       std::addressof(shapeArgs),
                       std::addressof(bindArgs),
                       &evalFlag,
                       &runFlag,
                       &profileFlag,
                       &explainFlag,
                       &jsonFlag,
                       &trainingFlag,
                       &seed};
  for (cl::Option *option : own)
    option->addCategory(kfuseOptions);
  cl::HideUnrelatedOptions(kfuseOptions);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kfusec (kfuse " << kfuse::version() << ", LLVM "
       << kfuse::llvmVersion() << ")\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "kfuse compiler driver: compiles a kf graph (.mlir) and prints a "
      "stage, evaluates it, or runs it on the GPU\n");

  auto graph = kfuse::Graph::fromFile(inputFile);
  if (!graph) {
    llvm::errs() << graph.error().message();
    if (!llvm::StringRef(graph.error().message()).ends_with("\n"))
      llvm::errs() << "\n";
    return 1;
  }
  if (evalFlag)
    return runEvaluator(*graph);
  if (runFlag)
    return runOnGPU(*graph);
  if (profileFlag)
    return profileOnGPU(*graph);
  if (trainingFlag)
    return compileTrainingGraphs(*graph);
  return compileAndPrint(*graph);
}
