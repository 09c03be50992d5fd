//===- CompileGraph.cpp - one specialisation of a graph to a Plan ---------===//

#include "compiler/CompileGraph.h"
#include "compiler/CodeGen.h"
#include "frontend/GraphImpl.h"
#include "ir/KFDialect.h"
#include "ir/ShapeInference.h"
#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"
#include "codegen/templates/PointwiseTemplate.h"
#include "compiler/PassPipeline.h"
#include "runtime/Debug.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ThreadPool.h"

#include <chrono>

using namespace mlir;

namespace kfuse::compiler {

const char *stageName(Stage stage) {
  switch (stage) {
  case Stage::Graph:
    return "graph";
  case Stage::Fused:
    return "fused";
  case Stage::GPU:
    return "gpu";
  case Stage::LLVM:
    return "llvm";
  case Stage::PTX:
    return "ptx";
  }
  return "?";
}

namespace {

std::unique_ptr<MLIRContext> createCompileContext() {
  DialectRegistry registry;
  codegen::registerDialects(registry);
  auto context = std::make_unique<MLIRContext>(registry,
                                               MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  codegen::registerTranslations(*context);
  return context;
}

/// A graph parsed into a fresh context, collecting diagnostics.
struct ParsedGraph {
  std::unique_ptr<MLIRContext> context = createCompileContext();
  std::string diagnostics;
  ScopedDiagnosticHandler handler{context.get(), [this](Diagnostic &d) {
                                    diagnostics +=
                                        (diagnostics.empty() ? "" : "\n") +
                                        d.str();
                                    return success();
                                  }};
  OwningOpRef<ModuleOp> module;

  explicit ParsedGraph(const std::string &text)
      : module(parseSourceString<ModuleOp>(text, context.get())) {}
};

std::string print(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

Error compileError(const std::string &stage, const std::string &diagnostics) {
  return Error(ErrorCode::CompileFailed,
               "kfuse: " + stage + " failed: " + diagnostics);
}

/// Zero-size tensors are rejected by name rather than launched as empty
/// grids, and tensors whose bytes overflow 64 bits rather than indexed
/// wrongly.
LogicalResult checkSizes(func::FuncOp func) {
  auto tooLarge = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.hasStaticShape())
      return false;
    std::optional<int64_t> elements = kf::shapes::elementCount(tensor.getShape());
    int64_t bytes;
    return !elements ||
           llvm::MulOverflow(
               *elements, int64_t((tensor.getElementTypeBitWidth() + 7) / 8),
               bytes);
  };
  for (BlockArgument arg : func.getArguments())
    if (tooLarge(arg.getType()))
      return func.emitError() << "argument " << arg.getArgNumber() << " is "
                              << arg.getType()
                              << ": more bytes than 64 bits can count";
  WalkResult large = func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (tooLarge(t)) {
        op->emitOpError() << "gives " << t
                          << ": more bytes than 64 bits can count";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (large.wasInterrupted())
    return failure();
  for (BlockArgument arg : func.getArguments())
    if (llvm::is_contained(
            mlir::cast<RankedTensorType>(arg.getType()).getShape(), 0)) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    "kf.name");
      return func.emitError()
             << "input '"
             << (name ? name.getValue().str()
                      : "arg" + std::to_string(arg.getArgNumber()))
             << "' is "
             << arg.getType() << ": tensors with a zero-size dim are not "
             << "supported";
    }
  WalkResult walk = func.walk([](Operation *op) {
    for (Type t : op->getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(t);
          tensor && llvm::is_contained(tensor.getShape(), 0)) {
        op->emitOpError() << "gives " << t << ": tensors with a zero-size "
                          << "dim are not supported";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// A buffer's shape and size: rows that kf-pad padded take their stride.
runtime::BufferDesc describe(Value v, runtime::BufferRole role,
                             uint32_t index) {
  auto type = mlir::cast<RankedTensorType>(v.getType());
  DType dtype = *fromMLIRType(type);
  uint64_t elements = type.getNumElements();
  if (int64_t stride = kf::paddedRowStride(v))
    elements = elements / type.getShape().back() * stride;
  return {role, index, dtype,
          std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
          elements * dtypeSize(dtype)};
}

/// Floating-point work of a kernel body: one per element of each
/// elementwise result (a transcendental counts one), the input elements of
/// a reduction, 5 an element of a softmax, 2MNK a matmul, 4 B H Sq Sk D an
/// attention.
uint64_t countFlops(kf::KernelOp kernel) {
  uint64_t flops = 0;
  auto elements = [](Value v) {
    return uint64_t(mlir::cast<RankedTensorType>(v.getType()).getNumElements());
  };
  kernel.getBody().walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::kf::Elementwise>() && !isa<kf::CastOp>(op))
      flops += elements(op->getResult(0));
    else if (auto r = dyn_cast<kf::ReduceOp>(op))
      flops += elements(r.getInput());
    else if (auto s = dyn_cast<kf::SoftmaxOp>(op))
      flops += 5 * elements(s.getInput());
    else if (auto m = dyn_cast<kf::MatmulOp>(op)) {
      auto a = mlir::cast<RankedTensorType>(m.getA().getType());
      int64_t k = a.getShape()[a.getRank() - (m.getTransposeA() ? 2 : 1)];
      flops += 2 * elements(m.getResult()) * k;
    } else if (auto att = dyn_cast<kf::AttentionOp>(op)) {
      auto q = mlir::cast<RankedTensorType>(att.getQ().getType()).getShape();
      auto k = mlir::cast<RankedTensorType>(att.getK().getType()).getShape();
      flops += 4 * uint64_t(q[0] * q[1] * q[2]) * k[2] * q[3];
    } else if (auto grad = dyn_cast<kf::AttentionGradOp>(op)) {
      // Five products of the forward's size (S, dP, dV, dK, dQ), as
      // FlashAttention counts its backward; the kernel recomputes two.
      auto q = mlir::cast<RankedTensorType>(grad.getQ().getType()).getShape();
      auto k = mlir::cast<RankedTensorType>(grad.getK().getType()).getShape();
      flops += 10 * uint64_t(q[0] * q[1] * q[2]) * k[2] * q[3];
    }
  });
  return flops;
}

/// The TMA tensor map of an operand of a warp-specialised kernel, over
/// buffer `buffer`.
runtime::TensorMapDesc tensorMapOf(const kf::TmaOperand &o, uint32_t buffer,
                                   kf::KernelOp kernel) {
  runtime::TensorMapDesc map;
  // An attention's K and V maps are [slices][keys][cols]: with the key
  // length taken at run time, so are their rows. Runtime extents are only
  // ever keys (kf.kernel's verifier), of K and V alike.
  if (kf::AttentionOp attention = kf::attentionOf(kernel);
      attention && kernel.getRuntimeExtentsAttr() && o.rank == 3 &&
      o.input != mlir::cast<BlockArgument>(attention.getQ()).getArgNumber())
    map.rowsExtent = 0;
  map.buffer = buffer;
  map.rank = o.rank;
  // Interleaved rows: a box of one row of each of boxRows groups.
  uint32_t box[3] = {uint32_t(o.boxCols), uint32_t(o.boxRows), 1};
  if (o.rowGroups > 1)
    std::swap(box[1], box[2]);
  for (int64_t d = 0; d < o.rank; ++d) {
    map.dims[d] = o.dims[d];
    map.box[d] = box[d];
    if (d > 0)
      map.strides[d - 1] = o.strides[d - 1] * o.elementBytes;
  }
  return map;
}

/// Buffers, launches and copies from the func of kernels.
runtime::Plan extractPlan(func::FuncOp func) {
  runtime::Plan plan;
  llvm::DenseMap<Value, uint32_t> bufferOf;
  for (BlockArgument arg : func.getArguments()) {
    bufferOf[arg] = plan.buffers.size();
    plan.buffers.push_back(
        describe(arg, runtime::BufferRole::Input, arg.getArgNumber()));
  }
  // An output written by a kernel is that kernel's buffer; an input or a
  // value returned twice is copied in after the launches.
  auto returned = func.getBody().front().getTerminator()->getOperands();
  SmallVector<std::pair<uint32_t, Value>> pendingCopies;
  for (auto [i, value] : llvm::enumerate(returned)) {
    uint32_t id = plan.buffers.size();
    plan.buffers.push_back(describe(value, runtime::BufferRole::Output, i));
    if (!isa<BlockArgument>(value) && !bufferOf.count(value))
      bufferOf[value] = id;
    else
      pendingCopies.push_back({id, value});
  }
  uint32_t temps = 0;
  for (auto kernel : func.getOps<kf::KernelOp>()) {
    for (Value result : kernel.getResults())
      if (!bufferOf.count(result)) {
        bufferOf[result] = plan.buffers.size();
        plan.buffers.push_back(
            describe(result, runtime::BufferRole::Temp, temps++));
      }
    runtime::LaunchDesc launch;
    launch.kernel = kernel.getGpuFuncAttr().str();
    kf::LaunchAttr shape = kernel.getLaunchAttr();
    launch.grid = shape.getGrid();
    launch.block = shape.getBlock();
    launch.sharedBytes = shape.getSharedBytes();
    for (Value v : kernel.getInputs())
      launch.buffers.push_back(bufferOf.lookup(v));
    for (Value v : kernel.getResults())
      launch.buffers.push_back(bufferOf.lookup(v));
    ArrayRef<int64_t> extents;
    if (DenseI64ArrayAttr pairs = kernel.getRuntimeExtentsAttr())
      extents = pairs.asArrayRef();
    for (size_t e = 0; e + 1 < extents.size(); e += 2)
      launch.extents.push_back(
          {bufferOf.lookup(kernel.getInputs()[extents[e]]),
           uint32_t(extents[e + 1])});
    if (kernel.copiesWithTma())
      for (const kf::TmaOperand &o : kf::tmaOperands(kernel))
        launch.tensorMaps.push_back(
            tensorMapOf(o, bufferOf.lookup(kernel.getInputs()[o.input]),
                        kernel));
    launch.flops = countFlops(kernel);
    for (unsigned result : kernel.resultsAddedInto())
      plan.zeroes.push_back({uint32_t(plan.launches.size()),
                             bufferOf.lookup(kernel.getResult(result))});
    plan.launches.push_back(std::move(launch));
  }
  for (auto [dst, value] : pendingCopies)
    plan.copies.push_back({dst, bufferOf.lookup(value)});
  return plan;
}

/// The inputs and outputs that may share a buffer (Plan::inPlace): those
/// of a plan that is one launch of the pointwise template, where the input
/// is streamed (read at each element before the element's results are
/// stored), the output is that kernel's result of the same shape and
/// element size, and no copy reads the input after the kernel.
std::vector<runtime::InPlaceDesc> inPlacePairs(func::FuncOp func,
                                               const runtime::Plan &plan) {
  auto kernels = llvm::to_vector(func.getOps<kf::KernelOp>());
  if (kernels.size() != 1 || !kf::usesPointwiseTemplate(kernels[0]))
    return {};
  kf::KernelOp kernel = kernels[0];
  const runtime::LaunchDesc &launch = plan.launches[0];
  SmallVector<BlockArgument> streamed = kf::streamedInputs(kernel);
  size_t numInputs = kernel.getInputs().size();
  std::vector<runtime::InPlaceDesc> pairs;
  for (uint32_t input = 0; input < plan.numInputs(); ++input) {
    bool readsOnlyStreamed = true;
    for (size_t i = 0; i < numInputs; ++i)
      if (launch.buffers[i] == input)
        readsOnlyStreamed &=
            llvm::is_contained(streamed, kernel.getBody().getArgument(i));
    for (const runtime::CopyDesc &copy : plan.copies)
      readsOnlyStreamed &= copy.src != input;
    if (!readsOnlyStreamed)
      continue;
    const runtime::BufferDesc &in = plan.buffers[input];
    for (size_t r = 0; r < kernel.getNumResults(); ++r) {
      const runtime::BufferDesc &out = plan.buffers[launch.buffers[numInputs + r]];
      if (out.role == runtime::BufferRole::Output && out.shape == in.shape &&
          dtypeSize(out.dtype) == dtypeSize(in.dtype))
        pairs.push_back({input, launch.buffers[numInputs + r]});
    }
  }
  return pairs;
}

bool usesWgmma(func::FuncOp func) {
  bool found = false;
  func.walk([&](kf::KernelOp kernel) { found |= kernel.usesWgmma(); });
  return found;
}

std::vector<std::string> shapeStrings(
    const std::vector<std::vector<int64_t>> &shapes) {
  std::vector<std::string> out;
  for (const std::vector<int64_t> &shape : shapes) {
    std::string text;
    for (int64_t d : shape)
      text += (text.empty() ? "" : "x") + std::to_string(d);
    out.push_back(text);
  }
  return out;
}

/// Marks the dims of `func`'s arguments that `symbols` name as runtime
/// dims (kf-runtime-extents reads them), or says why they cannot be: an op
/// that makes a tensor of such a size (iota, broadcast, ...) would make it
/// of the compiled size.
std::optional<std::string>
markRuntimeDims(func::FuncOp func, const std::vector<std::string> &symbols) {
  auto named = [&](ArrayAttr names, unsigned i) {
    auto name = names ? dyn_cast<StringAttr>(names[i]) : StringAttr();
    return name && llvm::is_contained(symbols, name.getValue().str());
  };
  std::optional<std::string> refusal;
  func.walk([&](Operation *op) {
    auto names = op->getAttrOfType<ArrayAttr>("dim_symbols");
    for (unsigned i = 0; names && i < names.size() && !refusal; ++i)
      if (named(names, i))
        refusal = op->getName().getStringRef().str() + " makes a tensor of " +
                  mlir::cast<StringAttr>(names[i]).getValue().str() + " elements";
  });
  if (refusal)
    return refusal;
  Builder b(func.getContext());
  for (unsigned a = 0; a < func.getNumArguments(); ++a) {
    auto names = func.getArgAttrOfType<ArrayAttr>(a, kf::kDimSymbolsAttr);
    SmallVector<int64_t> dims;
    for (unsigned i = 0; names && i < names.size(); ++i)
      if (named(names, i))
        dims.push_back(i);
    if (!dims.empty())
      func.setArgAttr(a, kf::kRuntimeDims, b.getDenseI64ArrayAttr(dims));
  }
  return std::nullopt;
}

/// The compile fails, `why` in the request's refusal.
Error refuseRuntimeDims(const CompileRequest &request, const std::string &why) {
  if (request.refusal)
    *request.refusal = why;
  return Error(ErrorCode::CompileFailed,
               "kfuse: the dims cannot be taken at run time: " + why);
}

} // namespace

namespace {
/// Wall time of each stage, printed under KFUSE_DEBUG.
class StageTimer {
public:
  void mark(const char *stage) {
    auto now = std::chrono::steady_clock::now();
    if (debugEnabled())
      debugLog(std::string("compile: ") + stage + " " +
               std::to_string(std::chrono::duration<double, std::milli>(
                                  now - last)
                                  .count()) +
               " ms");
    last = now;
  }

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};
} // namespace

/// 32-bit index arithmetic is cheaper; it is safe while every index, and
/// every grid-stride step past the end, stays below 2^31.
static unsigned indexBitsFor(func::FuncOp func) {
  int64_t largest = 0;
  func.walk([&](kf::KernelOp kernel) {
    for (Type t : llvm::concat<const Type>(kernel.getInputs().getTypes(),
                                           kernel.getResultTypes()))
      largest = std::max(largest,
                         mlir::cast<RankedTensorType>(t).getNumElements());
  });
  return largest < (int64_t(1) << 30) ? 32 : 64;
}

static kf::KernelPipelineOptions kernelOptionsFor(const CompileRequest &r) {
  kf::KernelPipelineOptions options;
  options.fused = r.fused;
  options.chip = r.arch;
  options.multiprocessors = r.multiprocessors;
  options.aligned = r.aligned;
  options.wgmma = r.arch == "sm_90" || r.arch == "sm_90a";
  options.pad = r.padRows;
  options.allowTF32 = r.allowTF32;
  options.splitK = r.splitK;
  options.splitKeys = r.splitKeys;
  options.deterministic = r.deterministic;
  options.attentionGradTma = r.attentionGradTma;
  return options;
}

/// The gpu.module of `module` (its kernels' host-side plan already
/// extracted) split into a gpu.module a kernel, lowered to the LLVM dialect
/// and then to PTX, into `plan`.
static Status emitKernels(ModuleOp module, func::FuncOp func,
                          const std::string &diagnostics,
                          llvm::function_ref<LogicalResult(ModuleOp, unsigned)>
                              lower,
                          StageTimer &timer, bool printLateStages,
                          runtime::Plan &plan) {
  OwningOpRef<ModuleOp> parts =
      codegen::splitByKernel(*module.getOps<gpu::GPUModuleOp>().begin());
  if (failed(lower(*parts, indexBitsFor(func))))
    return compileError("lowering to the LLVM dialect", diagnostics);
  timer.mark("lower to llvm dialect");
  codegen::Target target;
  target.arch = kf::TargetAttr::of(module).getChip().str();
  // wgmma exists only in sm_90a, the arch-specific Hopper target (its code
  // runs on compute capability 9.0 exactly).
  if (target.arch == "sm_90" && usesWgmma(func))
    target.arch = "sm_90a";
  llvm::Expected<codegen::BackendOutput> backend =
      codegen::emitPTX(*parts, target, printLateStages);
  if (!backend)
    return compileError("PTX generation", llvm::toString(backend.takeError()));
  timer.mark("llvm and ptx");
  for (const codegen::KernelTimes &t : backend->times)
    debugLog(llvm::formatv("compile: {0}: to LLVM IR {1:f1} ms, O3 {2:f1} "
                           "ms, NVPTX {3:f1} ms",
                           t.kernel, t.translate, t.optimize, t.codegen)
                 .str());
  if (printLateStages)
    plan.dumps["llvm"] = std::move(backend->llvmIR);
  plan.ptx = std::move(backend->ptx);
  return Status::ok();
}

namespace {
/// One compile's state as it goes through the stages: the parsed module
/// and its diagnostics, the stage timer and the plan filled so far.
class Compilation {
public:
  explicit Compilation(const CompileRequest &request)
      : request(request), parsed(request.graphText) {
    // The kernels lower and compile in parallel (codegen::splitByKernel),
    // on threads of this compile's own: started as needed, and none of
    // them left behind in a process that forks after.
    parsed.context->setThreadPool(threads);
  }

  Expected<runtime::Plan> compile() {
    timer.mark("context and parse");
    if (!parsed.module)
      return compileError("parsing the graph", parsed.diagnostics);
    if (Status s = specialise(); !s)
      return s.error();
    if (request.stopAfter == Stage::Graph)
      return std::move(plan);
    if (Status s = partition(); !s)
      return s.error();
    if (request.stopAfter == Stage::Fused)
      return std::move(plan);
    if (Status s = lowerToGPU(); !s)
      return s.error();
    if (request.stopAfter == Stage::GPU)
      return std::move(plan);
    auto lower = [&](ModuleOp parts, unsigned indexBits) {
      return run(parts, [&](PassManager &pm) {
        kf::buildLLVMLoweringPipeline(pm, indexBits);
      });
    };
    Status emitted = emitKernels(*parsed.module, func(), parsed.diagnostics,
                                 lower, timer, request.printLateStages, plan);
    if (!emitted)
      return emitted.error();
    return std::move(plan);
  }

private:
  LogicalResult run(llvm::function_ref<void(PassManager &)> build) {
    return run(*parsed.module, build);
  }

  LogicalResult run(ModuleOp module,
                    llvm::function_ref<void(PassManager &)> build) {
    PassManager pm(parsed.context.get());
    if (request.configure)
      request.configure(pm);
    build(pm);
    return pm.run(module);
  }

  func::FuncOp func() { return *parsed.module->getOps<func::FuncOp>().begin(); }

  /// The graph specialised to the request's shapes (kf graph IR).
  Status specialise() {
    if (!request.runtimeSymbols.empty())
      if (std::optional<std::string> why =
              markRuntimeDims(func(), request.runtimeSymbols))
        return refuseRuntimeDims(request, *why);
    kf::GraphPipelineOptions graphOptions;
    graphOptions.shapes = shapeStrings(request.shapes);
    if (failed(run([&](PassManager &pm) {
          kf::buildGraphPipeline(pm, graphOptions);
        })))
      return compileError("specialising the graph", parsed.diagnostics);
    if (failed(checkSizes(func())))
      return Error(ErrorCode::InvalidArgument, "kfuse: " + parsed.diagnostics);
    plan.dumps["graph"] = print(*parsed.module);
    timer.mark("graph");
    return Status::ok();
  }

  /// The graph partitioned into kernels with their launches and tilings.
  Status partition() {
    kf::KernelPipelineOptions kernelOptions = kernelOptionsFor(request);
    if (failed(run([&](PassManager &pm) {
          kf::buildKernelPipeline(pm, kernelOptions);
        })))
      return compileError("partitioning into kernels", parsed.diagnostics);
    if (auto why = (*parsed.module)
                       ->getAttrOfType<StringAttr>(kf::kRuntimeRefusal))
      return refuseRuntimeDims(request, why.getValue().str());
    plan.dumps["fused"] = print(*parsed.module);
    timer.mark("fuse and tile");
    return Status::ok();
  }

  /// The kernels as a gpu.module, and the host's plan extracted.
  Status lowerToGPU() {
    if (failed(run([](PassManager &pm) { kf::buildGPUPipeline(pm); })))
      return compileError("kf-lower-to-gpu", parsed.diagnostics);
    runtime::Plan extracted = extractPlan(func());
    extracted.inPlace = inPlacePairs(func(), extracted);
    extracted.dumps = std::move(plan.dumps);
    plan = std::move(extracted);
    auto gpuModule = *parsed.module->getOps<gpu::GPUModuleOp>().begin();
    if (request.printLateStages)
      plan.dumps["gpu"] = print(gpuModule);
    timer.mark("lower to gpu");
    return Status::ok();
  }

  const CompileRequest &request;
  StageTimer timer;
  llvm::DefaultThreadPool threads{llvm::hardware_concurrency()};
  ParsedGraph parsed;
  runtime::Plan plan;
};
} // namespace

Expected<runtime::Plan> compileGraph(const CompileRequest &request) {
  return Compilation(request).compile();
}

Expected<std::string> explainFusion(const CompileRequest &request, bool json) {
  ParsedGraph parsed(request.graphText);
  const std::string &diagnostics = parsed.diagnostics;
  OwningOpRef<ModuleOp> &module = parsed.module;
  if (!module)
    return compileError("parsing the graph", diagnostics);
  PassManager pm(parsed.context.get());
  kf::GraphPipelineOptions options;
  options.shapes = shapeStrings(request.shapes);
  kf::buildGraphPipeline(pm, options);
  if (failed(pm.run(*module)))
    return compileError("specialising the graph", diagnostics);
  auto func = *module->getOps<func::FuncOp>().begin();
  // What kf-online-softmax rewrote, and the near-matches it did not.
  llvm::DenseSet<Operation *> attentionBefore;
  func.walk([&](kf::AttentionOp op) { attentionBefore.insert(op); });
  // The target as a compile records it: fusion rules read it (whether a
  // matmul's K is split).
  PassManager rewrite(parsed.context.get());
  kf::addAttachTarget(rewrite, kernelOptionsFor(request));
  kf::buildGraphRewrites(rewrite, kernelOptionsFor(request));
  if (failed(rewrite.run(*module)))
    return compileError("rewriting attention", diagnostics);
  kf::Partition partition =
      kf::partitionForFusion(func.getBody().front(), request.fused);
  AsmState state(func);
  auto name = [&](Operation *op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    op->getResult(0).printAsOperand(os, state);
    return text + " (" + op->getName().getStringRef().str() + ")";
  };
  // One entry a rewrite or edge: a line of text, or a JSON object.
  std::string text;
  llvm::json::Array objects;
  func.walk([&](Operation *op) {
    auto refusal = op->getAttrOfType<StringAttr>(kf::kOnlineSoftmaxRefusal);
    bool rewritten = isa<kf::AttentionOp>(op) && !attentionBefore.contains(op);
    if (!refusal && !rewritten)
      return;
    std::string reason = rewritten ? "softmax(scale Q K^T) V rewritten into "
                                     "one attention kernel"
                                   : refusal.getValue().str();
    objects.push_back(llvm::json::Object{{"rewrite", "kf-online-softmax"},
                                         {"op", name(op)},
                                         {"applied", rewritten},
                                         {"reason", reason}});
    text += name(op) + ": kf-online-softmax " + (rewritten ? "applied, " : "") +
            reason + "\n";
  });
  for (const kf::FusionDecision &d : partition.decisions) {
    objects.push_back(llvm::json::Object{{"producer", name(d.producer)},
                                         {"consumer", name(d.consumer)},
                                         {"fused", d.fused},
                                         {"reason", d.reason}});
    text += name(d.producer) + " -> " + name(d.consumer) + ": " +
            (d.fused ? "fused" : "not fused") + ", " + d.reason + "\n";
  }
  if (!json)
    return text;
  return llvm::formatv("{0:2}\n", llvm::json::Value(std::move(objects))).str();
}

} // namespace kfuse::compiler
