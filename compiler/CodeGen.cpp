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
#include "llvm/Support/ThreadPool.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

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

/// One kernel of the gpu.module as an LLVM module of its own (its
/// definition, the helpers and globals, the other kernels left out), as
/// bitcode: a worker thread reads it into an LLVMContext of its own, which
/// LLVM needs for modules compiled at once.
struct KernelPart {
  std::string kernel;
  llvm::SmallVector<char, 0> bitcode;
};

bool isKernel(const llvm::GlobalValue &value) {
  const auto *f = llvm::dyn_cast<llvm::Function>(&value);
  return f && !f->isDeclaration() &&
         f->getCallingConv() == llvm::CallingConv::PTX_Kernel;
}

std::vector<KernelPart> splitByKernel(const llvm::Module &module) {
  std::vector<KernelPart> parts;
  for (const llvm::Function &kernel : module.functions()) {
    if (!isKernel(kernel))
      continue;
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          return !isKernel(*value) || value == &kernel;
        });
    // The other kernels are declarations now, and nothing calls them.
    for (llvm::Function &f : llvm::make_early_inc_range(part->functions()))
      if (f.isDeclaration() &&
          f.getCallingConv() == llvm::CallingConv::PTX_Kernel)
        f.eraseFromParent();
    KernelPart &out = parts.emplace_back();
    out.kernel = kernel.getName().str();
    llvm::raw_svector_ostream stream(out.bitcode);
    llvm::WriteBitcodeToFile(*part, stream);
  }
  if (parts.empty()) { // a plan of copies alone: a PTX module all the same
    KernelPart &out = parts.emplace_back();
    out.kernel = "none";
    llvm::raw_svector_ostream stream(out.bitcode);
    llvm::WriteBitcodeToFile(module, stream);
  }
  return parts;
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

llvm::Expected<BackendOutput> compilePart(const KernelPart &part,
                                          const Target &target, bool printIR) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createMachine(target);
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(
          llvm::StringRef(part.bitcode.data(), part.bitcode.size()),
          part.kernel),
      context);
  if (!module)
    return module.takeError();
  if (llvm::Error e = linkLibdevice(**module))
    return std::move(e);
  optimize(**module, **machine);
  nameLocalsAfter(**module, part.kernel);

  BackendOutput out;
  if (printIR) {
    llvm::raw_string_ostream irStream(out.llvmIR);
    (*module)->print(irStream, nullptr);
  }
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptxStream(ptx);
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, ptxStream, nullptr,
                                      llvm::CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX");
  codegen.run(**module);
  out.ptx = ptx.str().str();
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
  }
  return out;
}

} // namespace

llvm::Expected<BackendOutput> emitPTX(ModuleOp module, const Target &target,
                                      bool printIR) {
  auto gpuModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1)
    return makeError("expected one gpu.module");
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createMachine(target);
  if (!machine)
    return machine.takeError();
  std::vector<KernelPart> parts;
  {
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(gpuModules.front(), context, "kf_kernels");
    if (!llvmModule)
      return makeError("translation to LLVM IR failed");
    llvmModule->setTargetTriple(llvm::Triple("nvptx64-nvidia-cuda"));
    llvmModule->setDataLayout((*machine)->createDataLayout());
    declareDynamicShared(*llvmModule);
    parts = splitByKernel(*llvmModule);
  }
  // Each kernel is optimised and compiled apart, on all cores: a model's
  // plan has tens of kernels, and LLVM spent 1.1 s on GPT-2's in one
  // thread. The results are joined in kernel order, so the PTX is the
  // same whatever the threads' timing.
  std::vector<std::optional<BackendOutput>> outputs(parts.size());
  std::vector<std::string> errors(parts.size());
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (size_t i = 0; i < parts.size(); ++i)
      pool.async([&, i] {
        llvm::Expected<BackendOutput> out =
            compilePart(parts[i], target, printIR);
        if (out)
          outputs[i] = std::move(*out);
        else
          errors[i] = parts[i].kernel + ": " + llvm::toString(out.takeError());
      });
    pool.wait();
  }
  std::vector<BackendOutput> compiled;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!outputs[i])
      return makeError(errors[i]);
    compiled.push_back(std::move(*outputs[i]));
  }
  return join(compiled);
}

} // namespace kfuse::codegen
