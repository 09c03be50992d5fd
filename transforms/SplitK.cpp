//===- SplitK.cpp - kf-split-k: split the K of matmuls with few tiles -----===//
//
// A decode-sized matmul (M = 16 against a 4096 x 4096 weight) has as many
// output tiles as the GPU has SMs, or fewer, each looping over all of K:
// half the block slots stay empty, and the weight streams through one
// block's pipeline an SM. Splitting K lets more blocks stream it.
//
// Analyse: tensor-core matmul kernels with one dense result. Decide:
// splitKChunks() (MatmulTiling.cpp) from the tile kf-tile will choose, the
// tile count and the blocks an SM holds. Rewrite: the kernel becomes two.
// The matmul kernel computes f32 partial sums over K chunks of whole tile
// steps (kf.matmul's `k_chunk`: [S, ..., M, N]); a reduction kernel sums
// them and computes the epilogue the matmul kernel had (bias, activation,
// cast), reading the epilogue's other inputs itself.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFSPLITKPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// The kernel computing the partial sums of `matmul` (of `kernel`) over K
/// chunks of `chunk`.
KernelOp createPartialsKernel(OpBuilder &b, KernelOp kernel, MatmulOp matmul,
                              int64_t chunk) {
  Location loc = matmul.getLoc();
  // The kernel arguments the operands are read from (through the reshapes
  // that regroup their rows, which come along).
  llvm::SetVector<Value> operands;
  operands.insert(matmulOperandSource(matmul.getA()));
  operands.insert(matmulOperandSource(matmul.getB()));
  SmallVector<Value> inputs;
  for (Value operand : operands)
    inputs.push_back(
        kernel.getInputs()[mlir::cast<BlockArgument>(operand).getArgNumber()]);
  auto result = mlir::cast<RankedTensorType>(matmul.getType());
  SmallVector<int64_t> shape(result.getShape());
  int64_t k = MatmulProblem::of(matmul).k;
  shape.insert(shape.begin(), (k + chunk - 1) / chunk);
  auto partialsType = RankedTensorType::get(shape, b.getF32Type());
  auto partials = KernelOp::create(b, loc, TypeRange{partialsType}, inputs,
                                   KernelKind::matmul);
  Block *block = b.createBlock(&partials.getBody());
  IRMapping map;
  for (Value operand : operands)
    map.map(operand, block->addArgument(operand.getType(), operand.getLoc()));
  for (Operation &op : kernel.getBody().front())
    if (isMatmulOperandView(&op))
      b.clone(op, map);
  auto product =
      MatmulOp::create(b, loc, partialsType, map.lookup(matmul.getA()),
                       map.lookup(matmul.getB()), matmul.getTransposeA(),
                       matmul.getTransposeB(), b.getI64IntegerAttr(chunk));
  YieldOp::create(b, loc, product.getResult());
  b.setInsertionPointAfter(partials);
  return partials;
}

/// The kernel that sums `partials` and computes what `kernel` computed
/// from its matmul's result.
KernelOp createEpilogueKernel(OpBuilder &b, KernelOp kernel, MatmulOp matmul,
                              KernelOp partials) {
  Location loc = kernel.getLoc();
  Block &body = kernel.getBody().front();
  // The epilogue's own inputs: block arguments used outside the matmul
  // and its operands' views.
  auto ofMatmul = [&](Operation *op) {
    return op == matmul || isMatmulOperandView(op);
  };
  SmallVector<Value> inputs = {partials.getResult(0)};
  SmallVector<BlockArgument> args;
  for (BlockArgument arg : body.getArguments())
    if (!llvm::all_of(arg.getUsers(), ofMatmul)) {
      args.push_back(arg);
      inputs.push_back(kernel.getInputs()[arg.getArgNumber()]);
    }
  auto epilogue = KernelOp::create(b, loc, kernel.getResultTypes(), inputs,
                                   KernelKind::reduction);
  Block *block = b.createBlock(&epilogue.getBody());
  IRMapping map;
  Value sums = block->addArgument(partials.getResult(0).getType(), loc);
  for (BlockArgument arg : args)
    map.map(arg, block->addArgument(arg.getType(), arg.getLoc()));
  auto resultType = mlir::cast<RankedTensorType>(matmul.getType());
  Value total = ReduceOp::create(
      b, loc, resultType.clone(b.getF32Type()), ReduceKind::sum, sums,
      b.getDenseI64ArrayAttr({0}), /*keep_dims=*/false);
  if (!resultType.getElementType().isF32())
    total = CastOp::create(b, loc, resultType, total);
  map.map(matmul.getResult(), total);
  for (Operation &op : body.without_terminator())
    if (!ofMatmul(&op))
      b.clone(op, map);
  b.clone(*body.getTerminator(), map);
  return epilogue;
}

struct KFSplitKPass : public kfuse::kf::impl::KFSplitKPassBase<KFSplitKPass> {
  using KFSplitKPassBase::KFSplitKPassBase;

  void runOnOperation() override {
    target = TargetAttr::of(getOperation());
    SmallVector<KernelOp> kernels;
    getOperation().walk([&](KernelOp kernel) { kernels.push_back(kernel); });
    for (KernelOp kernel : kernels)
      if (int64_t chunk = chunkOf(kernel))
        split(kernel, chunk);
  }

  /// The K chunk to split `kernel`'s matmul into, or 0 to keep it whole.
  int64_t chunkOf(KernelOp kernel) {
    if (kernel.getKind() != KernelKind::matmul || kernel.getNumResults() != 1 ||
        paddedRowStride(kernel.getResult(0)))
      return 0;
    MatmulOp matmul = matmulOf(kernel);
    if (!isa<BlockArgument>(matmulOperandSource(matmul.getA())) ||
        !isa<BlockArgument>(matmulOperandSource(matmul.getB())))
      return 0;
    return splitKChunk(matmul, target);
  }

  void split(KernelOp kernel, int64_t chunk) {
    MatmulOp matmul = matmulOf(kernel);
    OpBuilder b(kernel);
    KernelOp partials = createPartialsKernel(b, kernel, matmul, chunk);
    KernelOp epilogue = createEpilogueKernel(b, kernel, matmul, partials);
    kernel.replaceAllUsesWith(epilogue.getResults());
    kernel.erase();
  }

  /// The module's target (kf-attach-target).
  TargetAttr target;
};

} // namespace
