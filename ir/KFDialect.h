//===- KFDialect.h - the kf dialect -----------------------------*- C++ -*-===//

#ifndef KFUSE_IR_KFDIALECT_H
#define KFUSE_IR_KFDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/KFTraits.h"

#include <array>

#include "ir/KFOpsDialect.h.inc"
#include "ir/KFOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/KFAttrs.h.inc"

#define GET_OP_CLASSES
#include "ir/KFOps.h.inc"

namespace kfuse::kf {
/// Name of the function-argument attribute that names symbolic dims.
inline constexpr llvm::StringLiteral kDimSymbolsAttr = "kf.dim_symbols";

/// The most blocks of a cluster that share a row (row_tiling's `cluster`):
/// 8 is the portable cluster size, what every Hopper launch may ask for.
inline constexpr int64_t kMaxRowCluster = 8;

/// An ordered index_add's block: its threads, the most result columns it
/// takes, and the most f32 sums of its tile (in dynamic shared memory: 96
/// KB, two blocks an SM).
inline constexpr int64_t kIndexAddThreads = 256;
inline constexpr int64_t kIndexAddColumnsPerBlock = 1024;
inline constexpr int64_t kIndexAddTileSums = 24576;

/// The shape of a value of ranked tensor type (every kf value).
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

/// Whether computing `op` again from the same operands gives its result
/// bit for bit wherever it is computed: views and copies of elements,
/// constants, casts (one correctly rounded conversion), sign changes. Other
/// ops are not: a kernel keeps 16-bit intermediates in f32, unrounded, and
/// may contract a multiply into an add. What a comparison reads may be
/// recomputed only through such ops.
bool isReproducedExactly(mlir::Operation *op);

/// Checks a decision attribute (a kf launch, tiling or pipeline; anything
/// else passes) against its own verifier again. Passes build decisions
/// with Attr::get, which does not verify; KernelOp's verifier calls this
/// so that a decision no template takes fails there, not as a kernel.
mlir::LogicalResult
verifyDecisionAttr(mlir::Attribute attr,
                   llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
} // namespace kfuse::kf

#endif // KFUSE_IR_KFDIALECT_H
