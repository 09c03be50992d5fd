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
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

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

llvm::Expected<BackendOutput> emitPTX(ModuleOp module, const Target &target) {
  auto gpuModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1)
    return makeError("expected one gpu.module");
  std::string error;
  const llvm::Target *nvptx = nvptxTarget(error);
  if (!nvptx)
    return makeError("no NVPTX target in this LLVM: " + error);
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::unique_ptr<llvm::TargetMachine> machine(nvptx->createTargetMachine(
      triple, target.arch, target.ptxFeature, llvm::TargetOptions(),
      std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("cannot create an NVPTX target machine for " +
                     target.arch);

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(gpuModules.front(), context, "kf_kernels");
  if (!llvmModule)
    return makeError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  declareDynamicShared(*llvmModule);
  if (llvm::Error e = linkLibdevice(*llvmModule))
    return std::move(e);
  optimize(*llvmModule, *machine);

  BackendOutput out;
  llvm::raw_string_ostream irStream(out.llvmIR);
  llvmModule->print(irStream, nullptr);
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptxStream(ptx);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, ptxStream, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX");
  codegen.run(*llvmModule);
  out.ptx = ptx.str().str();
  return out;
}

} // namespace kfuse::codegen
