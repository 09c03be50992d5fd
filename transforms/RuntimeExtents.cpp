//===- RuntimeExtents.cpp - kf-runtime-extents: sizes taken at run time ---===//
//
// A generation loop's KV cache grows by one token a step; compiled for each
// length, the loop would compile every step. The compiler specialises such
// a dim (`kf.runtime_dims` on the argument) for a representative size, and
// this pass decides whether the kernels reading it can take the call's
// size as a parameter instead: analyse each reader, record the pairs on
// the kernels, or say on the module why not.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "ir/KFDialect.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFRUNTIMEEXTENTSPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Why `kernel` cannot take the size of dim `dim` of its input `input` as
/// a parameter, or nothing when its template can.
std::optional<std::string> readerRefusal(KernelOp kernel, unsigned input,
                                         int64_t dim) {
  AttentionOp attention = attentionOf(kernel);
  if (!attention || !kernel.getTilingAs<FlashTilingAttr>())
    return "a " + stringifyKernelKind(kernel.getKind()).str() +
           " kernel reads it, and only the FlashAttention template takes a "
           "size at run time";
  if (attention.getMask() || attention.getBias())
    return std::string("its attention has a mask or bias over the keys");
  if (!isa<BlockArgument>(attention.getK()) ||
      !isa<BlockArgument>(attention.getV()))
    return std::string("its attention reads K or V as a view");
  BlockArgument arg = kernel.getBody().getArgument(input);
  for (Operation *user : arg.getUsers())
    if (user != attention.getOperation() ||
        (arg != attention.getK() && arg != attention.getV()) ||
        arg == attention.getQ())
      return std::string("the kernel reads it other than as K or V");
  if (dim != 2)
    return "dim " + std::to_string(dim) + " is not the key length";
  return std::nullopt;
}

std::string argumentName(func::FuncOp func, unsigned index) {
  auto name = func.getArgAttrOfType<StringAttr>(index, "kf.name");
  return name ? "'" + name.getValue().str() + "'"
              : "argument " + std::to_string(index);
}

/// Records on each reader of `arg` the key extent it takes, or returns
/// why some reader cannot.
std::optional<std::string>
assignExtents(func::FuncOp func, BlockArgument arg, int64_t dim,
              SmallVectorImpl<std::pair<KernelOp, int64_t>> &extents) {
  std::string where = "dim " + std::to_string(dim) + " of " +
                      argumentName(func, arg.getArgNumber());
  for (OpOperand &use : arg.getUses()) {
    auto kernel = dyn_cast<KernelOp>(use.getOwner());
    if (!kernel)
      return where + ": " + use.getOwner()->getName().getStringRef().str() +
             " reads it (it is returned or read outside a kernel)";
    if (std::optional<std::string> why =
            readerRefusal(kernel, use.getOperandNumber(), dim))
      return where + ": " + *why;
    auto keys = cast<BlockArgument>(attentionOf(kernel).getK());
    extents.push_back({kernel, keys.getArgNumber()});
  }
  return std::nullopt;
}

struct KFRuntimeExtentsPass
    : public kfuse::kf::impl::KFRuntimeExtentsPassBase<KFRuntimeExtentsPass> {
  using KFRuntimeExtentsPassBase::KFRuntimeExtentsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<KernelOp, int64_t>> extents;
    std::optional<std::string> refusal;
    for (auto func : module.getOps<func::FuncOp>())
      for (BlockArgument arg : func.getArguments()) {
        auto dims = func.getArgAttrOfType<DenseI64ArrayAttr>(
            arg.getArgNumber(), kRuntimeDims);
        for (int64_t dim : dims ? dims.asArrayRef() : ArrayRef<int64_t>())
          if (!refusal)
            refusal = assignExtents(func, arg, dim, extents);
      }
    if (refusal) {
      module->setAttr(kRuntimeRefusal,
                      StringAttr::get(module.getContext(), *refusal));
      return;
    }
    Builder b(module.getContext());
    for (auto [kernel, keys] : extents)
      if (kernel.runtimeExtentIndex(keys, 2) < 0) {
        SmallVector<int64_t> pairs;
        if (DenseI64ArrayAttr old = kernel.getRuntimeExtentsAttr())
          pairs.assign(old.asArrayRef().begin(), old.asArrayRef().end());
        pairs.append({keys, 2});
        kernel.setRuntimeExtentsAttr(b.getDenseI64ArrayAttr(pairs));
      }
  }
};

} // namespace
