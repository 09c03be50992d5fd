//===- kfuse-opt.cpp - mlir-opt with the kf dialect and passes ------------===//
//
// Drives single passes over .mlir files; the lit suite runs through it.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "compiler/PassPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  kfuse::kf::registerKFusePasses();
  mlir::DialectRegistry registry;
  // The kf dialect, and what kernels are made of (for tests that start
  // from a gpu.module, before or after its lowering to LLVM).
  registry.insert<kfuse::kf::KFDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::arith::ArithDialect,
                  mlir::memref::MemRefDialect, mlir::vector::VectorDialect,
                  mlir::nvgpu::NVGPUDialect, mlir::NVVM::NVVMDialect,
                  mlir::LLVM::LLVMDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kfuse optimizer driver\n", registry));
}
