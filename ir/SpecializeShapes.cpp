//===- SpecializeShapes.cpp - bind a graph's symbolic dims ----------------===//
//
// Collects the size of every symbol from the call's argument shapes and
// explicit bindings, rejects conflicts and unbound symbols, gives the
// arguments concrete types and recomputes every result type with the ops'
// own shape rules. kf-specialize runs it on every function; the evaluator
// runs it on the graph it interprets.
//
//===----------------------------------------------------------------------===//

#include "ir/SpecializeShapes.h"
#include "ir/KFDialect.h"
#include "ir/ShapeInference.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kfuse::kf;
namespace shapes = kfuse::kf::shapes;

namespace {

/// Symbol name -> size, remembering who bound each symbol for messages.
class SymbolBindings {
public:
  LogicalResult bind(StringRef symbol, int64_t size, const Twine &by,
                     function_ref<InFlightDiagnostic()> emitError) {
    auto [it, inserted] = sizes.try_emplace(symbol, size, by.str());
    if (inserted || it->second.first == size)
      return success();
    return emitError() << "symbolic dim '" << symbol << "' is bound to "
                       << it->second.first << " by " << it->second.second
                       << " and to " << size << " by " << by.str();
  }
  std::optional<int64_t> lookup(StringRef symbol) const {
    auto it = sizes.find(symbol);
    if (it == sizes.end())
      return std::nullopt;
    return it->second.first;
  }

private:
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
};

std::string argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, "kf.name"))
    return "argument '" + name.str() + "'";
  return "argument " + std::to_string(i);
}

/// The concrete type of a type whose `?` dims are named by `symbols`.
FailureOr<RankedTensorType> resolve(RankedTensorType type, ArrayAttr symbols,
                                    const SymbolBindings &bindings,
                                    function_ref<InFlightDiagnostic()> error) {
  if (type.hasStaticShape())
    return type;
  shapes::Shape shape(type.getShape());
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (!type.isDynamicDim(i))
      continue;
    StringRef symbol =
        symbols ? cast<StringAttr>(symbols[i]).getValue() : StringRef();
    std::optional<int64_t> size = bindings.lookup(symbol);
    if (!size)
      return error() << "symbolic dim " << i << " ('" << symbol << "') of "
                     << type << " is not bound to a size";
    d = *size;
  }
  return type.clone(shape);
}

/// Binds the symbols of argument `i` from the shape the call gives.
LogicalResult bindArgument(func::FuncOp func, unsigned i,
                           ArrayRef<int64_t> given, SymbolBindings &bindings) {
  auto type = cast<RankedTensorType>(func.getArgument(i).getType());
  auto symbols = func.getArgAttrOfType<ArrayAttr>(i, kDimSymbolsAttr);
  auto error = [&] { return func.emitError(); };
  shapes::ShapeDiag diag;
  if (given.size() != static_cast<size_t>(type.getRank()))
    return error() << argName(func, i) << " is " << type
                   << " but the call gives the shape " << diag.str(given);
  for (auto [d, size] : llvm::enumerate(given)) {
    std::string by = argName(func, i) + " dim " + std::to_string(d);
    if (!type.isDynamicDim(d)) {
      if (type.getDimSize(d) != size)
        return error() << by << " is " << type.getDimSize(d)
                       << " in the graph but " << size << " in the call";
      continue;
    }
    StringRef symbol =
        symbols ? cast<StringAttr>(symbols[d]).getValue() : StringRef();
    if (symbol.empty())
      return error() << by << " is symbolic but has no name in "
                     << kDimSymbolsAttr;
    if (failed(bindings.bind(symbol, size, by, error)))
      return failure();
  }
  return success();
}

/// The result type `op` has once its operands have concrete types.
FailureOr<Type> inferResultType(Operation *op, const SymbolBindings &bindings) {
  auto tensorOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto error = [op] { return op->emitOpError(); };
  shapes::ShapeDiag diag;
  auto withShape = [&](FailureOr<shapes::Shape> shape) -> FailureOr<Type> {
    if (failed(shape))
      return error() << diag.message();
    return Type(resultType.clone(*shape));
  };
  return TypeSwitch<Operation *, FailureOr<Type>>(op)
      .Case<IotaOp, BroadcastOp, ReshapeOp, RandomOp>([&](auto shaped) {
        return FailureOr<Type>(resolve(
            resultType, shaped.getDimSymbolsAttr(), bindings, error));
      })
      .Case([&](MatmulOp mm) {
        return withShape(shapes::inferMatmul(
            tensorOf(mm.getA()).getShape(), tensorOf(mm.getB()).getShape(),
            mm.getTransposeA(), mm.getTransposeB(), diag, mm.getKChunk()));
      })
      .Case([&](TransposeOp t) {
        return withShape(shapes::inferTranspose(
            tensorOf(t.getInput()).getShape(), t.getPerm(), diag));
      })
      .Case([&](SliceOp sl) {
        return withShape(shapes::inferSlice(tensorOf(sl.getInput()).getShape(),
                                            sl.getStarts(), sl.getLimits(),
                                            sl.getSteps(), diag));
      })
      .Case([&](ConcatOp c) {
        SmallVector<ArrayRef<int64_t>> inputs;
        for (Value input : c.getInputs())
          inputs.push_back(tensorOf(input).getShape());
        return withShape(shapes::inferConcat(inputs, c.getAxis(), diag));
      })
      .Case([&](PadOp p) {
        return withShape(shapes::inferPad(tensorOf(p.getInput()).getShape(),
                                          p.getLow(), p.getHigh(), diag));
      })
      .Case([&](GatherOp g) {
        return withShape(shapes::inferGather(
            tensorOf(g.getInput()).getShape(),
            tensorOf(g.getIndices()).getShape(), g.getAxis(), diag));
      })
      .Case([&](TakeAlongAxisOp t) {
        return withShape(shapes::inferTakeAlongAxis(
            tensorOf(t.getInput()).getShape(),
            tensorOf(t.getIndices()).getShape(), t.getAxis(), diag));
      })
      .Case([&](ArgReduceOp r) {
        return withShape(shapes::inferReduce(tensorOf(r.getInput()).getShape(),
                                             {static_cast<int64_t>(r.getAxis())},
                                             r.getKeepDims(),
                                             diag));
      })
      .Case([&](ReduceOp r) {
        return withShape(shapes::inferReduce(tensorOf(r.getInput()).getShape(),
                                             r.getAxes(), r.getKeepDims(),
                                             diag));
      })
      .Case([&](AttentionOp a) {
        shapes::AttentionShapes in{tensorOf(a.getQ()).getShape(),
                                   tensorOf(a.getK()).getShape(),
                                   tensorOf(a.getV()).getShape(), std::nullopt,
                                   std::nullopt};
        if (a.getMask())
          in.mask = tensorOf(a.getMask()).getShape();
        if (a.getBias())
          in.bias = tensorOf(a.getBias()).getShape();
        return withShape(shapes::inferAttention(in, diag));
      })
      .Case(
          [&](SelectOp s) { return FailureOr<Type>(s.getOnTrue().getType()); })
      .Case([&](ConstantOp c) { return FailureOr<Type>(c.getType()); })
      .Default([&](Operation *) -> FailureOr<Type> {
        // Elementwise ops, casts, compares and softmax keep the shape of
        // their first operand.
        return Type(resultType.clone(tensorOf(op->getOperand(0)).getShape()));
      });
}

LogicalResult retypeBlock(Block &block, const SymbolBindings &bindings);

LogicalResult retypeOp(Operation *op, const SymbolBindings &bindings) {
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    Block &body = kernel.getBody().front();
    for (auto [arg, input] : llvm::zip(body.getArguments(), kernel.getInputs()))
      arg.setType(input.getType());
    if (failed(retypeBlock(body, bindings)))
      return failure();
    for (auto [result, yielded] :
         llvm::zip(kernel.getResults(), body.getTerminator()->getOperands()))
      result.setType(yielded.getType());
    return success();
  }
  auto attention = dyn_cast<AttentionOp>(op);
  bool withLse = attention && attention.getLse();
  if ((op->getNumResults() != 1 && !withLse) ||
      !isa<KFDialect>(op->getDialect()))
    return success();
  FailureOr<Type> type = inferResultType(op, bindings);
  if (failed(type))
    return failure();
  op->getResult(0).setType(*type);
  // The log-sum-exp has one per query row: the result's shape less its
  // last dim.
  if (withLse)
    attention.getLse().setType(RankedTensorType::get(
        cast<RankedTensorType>(*type).getShape().drop_back(),
        Float32Type::get(op->getContext())));
  if (cast<RankedTensorType>(*type).hasStaticShape())
    op->removeAttr("dim_symbols");
  return success();
}

LogicalResult retypeBlock(Block &block, const SymbolBindings &bindings) {
  for (Operation &op : block)
    if (failed(retypeOp(&op, bindings)))
      return failure();
  return success();
}

} // namespace

LogicalResult
kfuse::kf::specializeShapes(func::FuncOp func,
                            ArrayRef<SmallVector<int64_t, 4>> argShapes,
                            const llvm::StringMap<int64_t> &explicitBindings) {
  SymbolBindings bindings;
  auto error = [&] { return func.emitError(); };
  for (const auto &entry : explicitBindings)
    if (failed(bindings.bind(entry.getKey(), entry.getValue(),
                             "the binding " + entry.getKey().str() + "=" +
                                 std::to_string(entry.getValue()),
                             error)))
      return failure();
  unsigned numArgs = func.getNumArguments();
  if (!argShapes.empty() && argShapes.size() != numArgs)
    return error() << "the call gives " << argShapes.size()
                   << " argument shapes for " << numArgs << " arguments";
  for (unsigned i = 0; i < argShapes.size(); ++i)
    if (failed(bindArgument(func, i, argShapes[i], bindings)))
      return failure();

  Block &body = func.getBody().front();
  for (unsigned i = 0; i < numArgs; ++i) {
    auto symbols = func.getArgAttrOfType<ArrayAttr>(i, kDimSymbolsAttr);
    FailureOr<RankedTensorType> type =
        resolve(cast<RankedTensorType>(body.getArgument(i).getType()),
                symbols, bindings, error);
    if (failed(type))
      return failure();
    body.getArgument(i).setType(*type);
    func.removeArgAttr(i, kDimSymbolsAttr);
  }
  if (failed(retypeBlock(body, bindings)))
    return failure();
  func.setFunctionType(FunctionType::get(
      func.getContext(), body.getArgumentTypes(),
      body.getTerminator()->getOperandTypes()));
  return success();
}
