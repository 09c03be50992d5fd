//===- Fuse.cpp - kf-fuse: partition the graph into kernels ---------------===//
//
// Analyse: classify each op by the kernel kind that computes it. Decide:
// walk the ops backwards; in fused mode a pointwise op joins its consumers'
// kernel when they all share one pointwise kernel. Rewrite: wrap each
// partition in a kf.kernel whose single result is the partition's root.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFFUSEPASS
#include "passes/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

KernelKind kfuse::kf::kernelKindOf(Operation *op) {
  if (isa<ReduceOp>(op))
    return KernelKind::reduction;
  if (isa<SoftmaxOp>(op))
    return KernelKind::normalization;
  if (isa<MatmulOp>(op))
    return KernelKind::matmul;
  if (isa<AttentionOp>(op))
    return KernelKind::attention;
  return KernelKind::pointwise;
}

namespace {

/// A splat constant costs nothing to recompute: every kernel gets its own.
bool isFreeConstant(Operation *op) {
  auto constant = dyn_cast<ConstantOp>(op);
  return constant && isa<SplatElementsAttr>(constant.getValue());
}

/// Partition ids per op, in fused or unfused mode.
llvm::DenseMap<Operation *, int> partition(Block &body, bool fused) {
  llvm::DenseMap<Operation *, int> cluster;
  llvm::DenseMap<int, KernelKind> kinds;
  int next = 0;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (isFreeConstant(&op))
      continue;
    KernelKind kind = kernelKindOf(&op);
    std::optional<int> joined;
    if (fused && kind == KernelKind::pointwise && !op.use_empty()) {
      for (Operation *user : op.getUsers()) {
        auto it = cluster.find(user);
        if (it == cluster.end() || kinds[it->second] != KernelKind::pointwise ||
            (joined && *joined != it->second)) {
          joined.reset();
          break;
        }
        joined = it->second;
      }
    }
    int id = joined ? *joined : next++;
    cluster[&op] = id;
    kinds[id] = kind;
  }
  return cluster;
}

/// Wraps `ops` (in program order, the last one the root) in a kf.kernel.
void buildKernel(ArrayRef<Operation *> ops, KernelKind kind) {
  Operation *root = ops.back();
  llvm::SmallPtrSet<Operation *, 16> inside(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && inside.contains(def))
        continue;
      if (def && isFreeConstant(def))
        constants.insert(def);
      else
        inputs.insert(operand);
    }
  OpBuilder b(root);
  auto kernel = KernelOp::create(b, root->getLoc(), root->getResultTypes(),
                                 inputs.getArrayRef(), kind, DictionaryAttr());
  Block *block = b.createBlock(&kernel.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, block->addArgument(input.getType(), input.getLoc()));
  for (Operation *constant : constants)
    b.clone(*constant, mapping);
  for (Operation *op : ops)
    b.clone(*op, mapping);
  YieldOp::create(b, root->getLoc(),
                  mapping.lookup(root->getResult(0)));
  root->getResult(0).replaceAllUsesWith(kernel.getResult(0));
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct KFFusePass : public kfuse::kf::impl::KFFusePassBase<KFFusePass> {
  using KFFusePassBase::KFFusePassBase;

  void runOnOperation() override {
    if (mode != "fused" && mode != "unfused") {
      getOperation().emitError() << "kf-fuse: mode must be fused or unfused, "
                                    "got '"
                                 << mode << "'";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      Block &body = func.getBody().front();
      llvm::DenseMap<Operation *, int> cluster =
          partition(body, mode == "fused");
      // Group in program order; the last op of a group is its root.
      std::map<int, SmallVector<Operation *>> groups;
      for (Operation &op : body.without_terminator())
        if (cluster.count(&op))
          groups[cluster[&op]].push_back(&op);
      for (auto &[id, ops] : groups) {
        bool pointwise = llvm::all_of(ops, [](Operation *op) {
          return kernelKindOf(op) == KernelKind::pointwise;
        });
        buildKernel(ops, pointwise ? KernelKind::pointwise
                                   : kernelKindOf(ops.back()));
      }
      // Constants now live inside the kernels that read them.
      for (Operation &op : llvm::make_early_inc_range(body))
        if (isFreeConstant(&op) && op.use_empty())
          op.erase();
    }
  }
};

} // namespace
