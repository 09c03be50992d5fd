//===- CodeGen.cpp - gpu.module to PTX ------------------------------------===//

#include "compiler/CodeGen.h"

#include "ir/KFDialect.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <chrono>
#include <mutex>

// libdevice.10.bc from the CUDA toolkit, embedded at build time (Libdevice.S).
extern "C" const char kfuse_libdevice_begin[];
extern "C" const char kfuse_libdevice_end[];

using namespace mlir;

namespace kfuse::codegen {

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

void registerDialects(DialectRegistry &registry) {
  registry.insert<kf::KFDialect, func::FuncDialect, gpu::GPUDialect,
                  scf::SCFDialect, arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect, cf::ControlFlowDialect,
                  LLVM::LLVMDialect, NVVM::NVVMDialect,
                  vector::VectorDialect, nvgpu::NVGPUDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
}

void registerTranslations(MLIRContext &context) {
  registerBuiltinDialectTranslation(context);
  registerLLVMDialectTranslation(context);
  registerNVVMDialectTranslation(context);
  registerGPUDialectTranslation(context);
}

static const llvm::Target *nvptxTarget(std::string &error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  return llvm::TargetRegistry::lookupTarget(llvm::Triple("nvptx64-nvidia-cuda"),
                                            error);
}

/// Links the libdevice functions the module calls, and makes everything
/// but the kernels internal so O3 drops what is unused.
static llvm::Error linkLibdevice(llvm::Module &module) {
  bool callsLibdevice = llvm::any_of(module.functions(), [](llvm::Function &f) {
    return f.isDeclaration() && f.getName().starts_with("__nv_");
  });
  if (callsLibdevice) {
    llvm::MemoryBufferRef bitcode(
        llvm::StringRef(kfuse_libdevice_begin,
                        kfuse_libdevice_end - kfuse_libdevice_begin),
        "libdevice.10.bc");
    // Lazily: only the functions the kernels call are read and linked.
    auto libdevice = llvm::getLazyBitcodeModule(bitcode, module.getContext());
    if (!libdevice)
      return libdevice.takeError();
    (*libdevice)->setTargetTriple(module.getTargetTriple());
    (*libdevice)->setDataLayout(module.getDataLayout());
    if (llvm::Linker::linkModules(module, std::move(*libdevice),
                                  llvm::Linker::Flags::LinkOnlyNeeded))
      return makeError("linking libdevice failed");
  }
  for (llvm::Function &f : module.functions())
    if (!f.isDeclaration() &&
        f.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  return llvm::Error::success();
}

/// gpu.dynamic_shared_memory becomes an internal zero-sized shared array,
/// which NVPTX emits as a one-byte static variable: the kernel would index
/// past it. An external declaration is PTX's `.extern .shared x[]`, the
/// start of the launch's dynamic shared memory.
static void declareDynamicShared(llvm::Module &module) {
  for (llvm::GlobalVariable &g : module.globals()) {
    auto *array = llvm::dyn_cast<llvm::ArrayType>(g.getValueType());
    if (g.getAddressSpace() != 3 || !array || array->getNumElements() != 0)
      continue;
    g.setInitializer(nullptr);
    g.setLinkage(llvm::GlobalValue::ExternalLinkage);
    // wgmma's 128-byte swizzle repeats every 1024 bytes: stages start on
    // such a boundary.
    g.setAlignment(llvm::Align(1024));
  }
}

/// A shared-memory buffer (a gpu.func's workgroup attribution) without an
/// alignment of its own gets the one LLVM's passes already assume for it:
/// a global of more than 16 bytes is taken to start on a 16-byte boundary
/// (DataLayout::getPreferredAlign), which lets the load-store vectoriser
/// merge its accesses into 16-byte vectors, while the NVPTX printer
/// declares only its element's alignment (`.shared .align 4`): ptxas could
/// then place it where those vector accesses are misaligned.
static void alignSharedBuffers(llvm::Module &module) {
  const llvm::DataLayout &layout = module.getDataLayout();
  for (llvm::GlobalVariable &g : module.globals())
    if (g.getAddressSpace() == 3 && !g.isDeclaration() && !g.getAlign())
      g.setAlignment(layout.getPreferredAlign(&g));
}

static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(module, mam);
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createMachine(const Target &target) {
  std::string error;
  const llvm::Target *nvptx = nvptxTarget(error);
  if (!nvptx)
    return makeError("no NVPTX target in this LLVM: " + error);
  std::unique_ptr<llvm::TargetMachine> machine(nvptx->createTargetMachine(
      llvm::Triple("nvptx64-nvidia-cuda"), target.arch, target.ptxFeature,
      llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("cannot create an NVPTX target machine for " +
                     target.arch);
  return machine;
}

namespace {

/// Milliseconds between laps.
class Stopwatch {
public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  }

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};

bool isKernel(const llvm::GlobalValue &value) {
  const auto *f = llvm::dyn_cast<llvm::Function>(&value);
  return f && !f->isDeclaration() &&
         f->getCallingConv() == llvm::CallingConv::PTX_Kernel;
}

/// Kernels compiled apart each keep their helpers and their dynamic shared
/// memory symbol: those get the kernel's name, so that the PTX modules
/// joined into one define each symbol once.
void nameLocalsAfter(llvm::Module &module, llvm::StringRef kernel) {
  for (llvm::GlobalValue &value : module.global_values())
    if (!isKernel(value) && !value.isDeclaration() &&
        !value.getName().starts_with("llvm."))
      value.setName(value.getName() + "_" + kernel);
  for (llvm::GlobalVariable &g : module.globals())
    if (g.isDeclaration() && g.getAddressSpace() == 3)
      g.setName(g.getName() + "_" + kernel);
}

/// The kernel `module` defines ("none" for a plan of copies alone, whose
/// PTX module is empty all the same).
std::string kernelOf(const llvm::Module &module) {
  for (const llvm::Function &f : module.functions())
    if (isKernel(f))
      return f.getName().str();
  return "none";
}

/// `module` written as bitcode and read back, named `kernel`. Kernels were
/// once compiled from bitcode (the whole gpu.module translated, then split
/// by kernel); reading it back orders each value's uses as then, and LLVM's
/// passes visit uses in that order: so the PTX stays what the GPU suite and
/// the benchmarks ran, byte for byte (without it, 19 of the 1,277
/// scripts/ptx-snapshot.sh compiles number or order registers otherwise).
llvm::Expected<std::unique_ptr<llvm::Module>>
throughBitcode(const llvm::Module &module, llvm::StringRef kernel) {
  llvm::SmallVector<char, 0> bitcode;
  llvm::raw_svector_ostream stream(bitcode);
  llvm::WriteBitcodeToFile(module, stream);
  return llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()),
                            kernel),
      module.getContext());
}

/// PTX for one kernel's gpu.module (in the LLVM and NVVM dialects), in an
/// LLVMContext of its own, as LLVM needs for modules compiled at once.
llvm::Expected<BackendOutput> compileKernel(gpu::GPUModuleOp part,
                                            const Target &target,
                                            bool printIR) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createMachine(target);
  if (!machine)
    return machine.takeError();
  BackendOutput out;
  KernelTimes &times = out.times.emplace_back();
  Stopwatch watch;
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(part, context, "kf_kernels");
  if (!module)
    return makeError("translation to LLVM IR failed");
  std::string kernel = kernelOf(*module);
  llvm::Expected<std::unique_ptr<llvm::Module>> reread =
      throughBitcode(*module, kernel);
  if (!reread)
    return reread.takeError();
  module = std::move(*reread);
  times.kernel = kernel;
  times.translate = watch.lap();
  module->setTargetTriple(llvm::Triple("nvptx64-nvidia-cuda"));
  module->setDataLayout((*machine)->createDataLayout());
  declareDynamicShared(*module);
  alignSharedBuffers(*module);
  if (llvm::Error e = linkLibdevice(*module))
    return std::move(e);
  optimize(*module, **machine);
  nameLocalsAfter(*module, kernel);
  times.optimize = watch.lap();

  if (printIR) {
    llvm::raw_string_ostream irStream(out.llvmIR);
    module->print(irStream, nullptr);
  }
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptxStream(ptx);
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, ptxStream, nullptr,
                                      llvm::CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX");
  codegen.run(*module);
  out.ptx = ptx.str().str();
  times.codegen = watch.lap();
  return out;
}

/// The kernels' PTX as one module: the first's header (.version, .target,
/// .address_size), then each one's body, in the gpu.module's order.
llvm::Expected<BackendOutput> join(std::vector<BackendOutput> &parts) {
  constexpr llvm::StringLiteral kHeaderEnd = ".address_size 64\n";
  BackendOutput out;
  std::string header;
  for (BackendOutput &part : parts) {
    size_t end = part.ptx.find(kHeaderEnd);
    if (end == std::string::npos)
      return makeError("the NVPTX backend wrote PTX with no .address_size");
    end += kHeaderEnd.size();
    if (header.empty()) {
      header = part.ptx.substr(0, end);
      out.ptx = header;
    } else if (part.ptx.compare(0, end, header)) {
      return makeError("kernels compiled apart got different PTX headers");
    }
    out.ptx.append(part.ptx, end);
    out.llvmIR += part.llvmIR;
    llvm::append_range(out.times, part.times);
  }
  return out;
}

} // namespace

OwningOpRef<ModuleOp> splitByKernel(gpu::GPUModuleOp kernels) {
  OpBuilder b(kernels.getContext());
  OwningOpRef<ModuleOp> parts = ModuleOp::create(kernels.getLoc());
  auto isKernelFunc = [](Operation &op) {
    auto func = dyn_cast<gpu::GPUFuncOp>(op);
    return func && func.isKernel();
  };
  auto addPart = [&](Operation *kernel, StringRef name) {
    b.setInsertionPointToEnd(parts->getBody());
    auto part = cast<gpu::GPUModuleOp>(b.cloneWithoutRegions(*kernels));
    part.setName(name);
    b.createBlock(&part.getBodyRegion());
    for (Operation &op : kernels.getBody()->getOperations())
      if (!isKernelFunc(op) || &op == kernel)
        b.clone(op);
  };
  for (Operation &op : kernels.getBody()->getOperations())
    if (isKernelFunc(op))
      addPart(&op, (kernels.getName() + "_" +
                    cast<gpu::GPUFuncOp>(op).getName()).str());
  if (parts->getBody()->empty()) // a plan of copies alone
    addPart(nullptr, kernels.getName());
  return parts;
}

llvm::Expected<BackendOutput> emitPTX(ModuleOp parts, const Target &target,
                                      bool printIR) {
  auto kernels = llvm::to_vector(parts.getOps<gpu::GPUModuleOp>());
  if (kernels.empty())
    return makeError("expected a gpu.module a kernel");
  // Each kernel is translated, optimised and compiled apart, on the
  // context's threads: a model's plan has tens of kernels, and LLVM spent
  // 1.1 s on GPT-2's in one thread. The results are joined in kernel
  // order, so the PTX is the same whatever the threads' timing.
  std::vector<std::optional<BackendOutput>> outputs(kernels.size());
  std::vector<std::string> errors(kernels.size());
  (void)failableParallelForEachN(
      parts.getContext(), 0, kernels.size(), [&](size_t i) {
        llvm::Expected<BackendOutput> out =
            compileKernel(kernels[i], target, printIR);
        if (!out) {
          errors[i] = kernels[i].getName().str() + ": " +
                      llvm::toString(out.takeError());
          return failure();
        }
        outputs[i] = std::move(*out);
        return success();
      });
  for (const std::string &error : errors)
    if (!error.empty())
      return makeError(error);
  std::vector<BackendOutput> compiled;
  for (std::optional<BackendOutput> &output : outputs)
    compiled.push_back(std::move(*output));
  return join(compiled);
}

} // namespace kfuse::codegen
