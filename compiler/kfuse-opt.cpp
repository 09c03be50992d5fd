//===- kfuse-opt.cpp - mlir-opt with the kf dialect and passes ------------===//
//
// Drives single passes over .mlir files; the lit suite runs through it.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  kfuse::kf::registerKFusePasses();
  mlir::DialectRegistry registry;
  registry.insert<kfuse::kf::KFDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kfuse optimizer driver\n", registry));
}
