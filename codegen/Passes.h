//===- Passes.h - kfuse's lowering passes -----------------------*- C++ -*-===//

#ifndef KFUSE_CODEGEN_PASSES_H
#define KFUSE_CODEGEN_PASSES_H

#include "ir/KFDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace kfuse::kf {

#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"

/// The gpu.func attribute that counts its last arguments that are TMA
/// tensor maps, which kf-grid-constants turns into by-value grid constants
/// of kTensorMapBytes bytes (a CUtensorMap).
inline constexpr llvm::StringLiteral kTensorMapArgs = "kf.tensor_maps";
constexpr unsigned kTensorMapBytes = 128;

} // namespace kfuse::kf

#endif // KFUSE_CODEGEN_PASSES_H
