//===- Specialize.cpp - kf-specialize: bind symbolic dims -----------------===//
//
// Parses the pass's options (argument shapes, NAME=SIZE bindings) and runs
// specializeShapes (ir/SpecializeShapes.h) on every function: it collects
// the size of every symbol, rejects conflicts and unbound symbols, and
// recomputes every type.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "ir/SpecializeShapes.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFSPECIALIZEPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

LogicalResult parseShape(StringRef text, SmallVectorImpl<int64_t> &shape) {
  text = text.trim();
  if (text.empty())
    return success();
  SmallVector<StringRef> dims;
  text.split(dims, 'x');
  for (StringRef d : dims) {
    int64_t size;
    if (d.trim().getAsInteger(10, size) || size < 0)
      return failure();
    shape.push_back(size);
  }
  return success();
}

struct KFSpecializePass
    : public kfuse::kf::impl::KFSpecializePassBase<KFSpecializePass> {
  using KFSpecializePassBase::KFSpecializePassBase;

  void runOnOperation() override {
    llvm::StringMap<int64_t> bindings;
    for (StringRef pair : bind) {
      auto [name, size] = pair.split('=');
      int64_t value;
      if (name.trim().empty() || size.trim().getAsInteger(10, value)) {
        getOperation().emitError() << "bad binding '" << pair
                                   << "', expected NAME=SIZE";
        return signalPassFailure();
      }
      bindings[name.trim()] = value;
    }
    SmallVector<SmallVector<int64_t, 4>> argShapes(shapes.size());
    for (auto [text, shape] : llvm::zip(shapes, argShapes))
      if (failed(parseShape(text, shape))) {
        getOperation().emitError() << "bad shape '" << text
                                   << "', expected e.g. 128x64";
        return signalPassFailure();
      }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(specializeShapes(func, argShapes, bindings)))
        return signalPassFailure();
  }
};

} // namespace
