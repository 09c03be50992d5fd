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
  FailureOr<shapes::Shape> shape = resolveNamedDims(
      type, symbols, [&](unsigned i, StringRef symbol) -> FailureOr<int64_t> {
        std::optional<int64_t> size = bindings.lookup(symbol);
        if (!size)
          return error() << "symbolic dim " << i << " ('" << symbol
                         << "') of " << type << " is not bound to a size";
        return *size;
      });
  if (failed(shape))
    return failure();
  return type.clone(*shape);
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
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape = inferResultShape(
      op,
      [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); },
      [&](unsigned i, StringRef symbol) -> FailureOr<int64_t> {
        std::optional<int64_t> size = bindings.lookup(symbol);
        if (!size)
          return op->emitOpError()
                 << "symbolic dim " << i << " ('" << symbol << "') of "
                 << resultType << " is not bound to a size";
        return *size;
      },
      diag);
  if (failed(shape)) {
    if (!diag.message().empty())
      op->emitOpError() << diag.message();
    return failure();
  }
  return Type(resultType.clone(*shape));
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
  // Attention's gradients have the shapes of q, k and v.
  if (auto grad = dyn_cast<AttentionGradOp>(op)) {
    Value primals[] = {grad.getQ(), grad.getK(), grad.getV()};
    for (auto [result, primal] : llvm::zip(grad->getResults(), primals))
      result.setType(cast<RankedTensorType>(result.getType())
                         .clone(cast<RankedTensorType>(primal.getType())
                                    .getShape()));
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

FailureOr<shapes::Shape> kfuse::kf::resolveNamedDims(
    RankedTensorType type, ArrayAttr symbols,
    function_ref<FailureOr<int64_t>(unsigned, StringRef)> namedDim) {
  shapes::Shape shape(type.getShape());
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (!type.isDynamicDim(i))
      continue;
    StringRef symbol =
        symbols ? cast<StringAttr>(symbols[i]).getValue() : StringRef();
    FailureOr<int64_t> named = namedDim(i, symbol);
    if (failed(named))
      return failure();
    d = *named;
  }
  return shape;
}

FailureOr<shapes::Shape> kfuse::kf::inferResultShape(
    Operation *op, function_ref<ArrayRef<int64_t>(Value)> shapeOf,
    function_ref<FailureOr<int64_t>(unsigned, StringRef)> namedDim,
    shapes::ShapeDiag &diag) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  return TypeSwitch<Operation *, FailureOr<shapes::Shape>>(op)
      .Case<IotaOp, BroadcastOp, ReshapeOp, RandomOp>([&](auto shaped) {
        return resolveNamedDims(resultType, shaped.getDimSymbolsAttr(),
                                namedDim);
      })
      .Case([&](MatmulOp mm) {
        return shapes::inferMatmul(shapeOf(mm.getA()), shapeOf(mm.getB()),
                                   mm.getTransposeA(), mm.getTransposeB(),
                                   diag, mm.getKChunk());
      })
      .Case([&](TransposeOp t) {
        return shapes::inferTranspose(shapeOf(t.getInput()), t.getPerm(),
                                      diag);
      })
      .Case([&](SliceOp sl) {
        return shapes::inferSlice(shapeOf(sl.getInput()), sl.getStarts(),
                                  sl.getLimits(), sl.getSteps(), diag);
      })
      .Case([&](ConcatOp c) {
        SmallVector<ArrayRef<int64_t>> inputs;
        for (Value input : c.getInputs())
          inputs.push_back(shapeOf(input));
        return shapes::inferConcat(inputs, c.getAxis(), diag);
      })
      .Case([&](PadOp p) {
        return shapes::inferPad(shapeOf(p.getInput()), p.getLow(),
                                p.getHigh(), diag);
      })
      .Case([&](GatherOp g) {
        return shapes::inferGather(shapeOf(g.getInput()),
                                   shapeOf(g.getIndices()), g.getAxis(), diag);
      })
      .Case([&](IndexAddOp a) {
        return shapes::inferIndexAdd(shapeOf(a.getUpdates()),
                                     shapeOf(a.getIndices()), a.getAxis(),
                                     a.getSize(), diag);
      })
      .Case([&](TakeAlongAxisOp t) {
        return shapes::inferTakeAlongAxis(shapeOf(t.getInput()),
                                          shapeOf(t.getIndices()), t.getAxis(),
                                          diag);
      })
      .Case([&](ArgReduceOp r) {
        return shapes::inferReduce(shapeOf(r.getInput()),
                                   {static_cast<int64_t>(r.getAxis())},
                                   r.getKeepDims(), diag);
      })
      .Case([&](ReduceOp r) {
        return shapes::inferReduce(shapeOf(r.getInput()), r.getAxes(),
                                   r.getKeepDims(), diag);
      })
      .Case([&](AttentionOp a) {
        shapes::AttentionShapes in{shapeOf(a.getQ()), shapeOf(a.getK()),
                                   shapeOf(a.getV()), std::nullopt,
                                   std::nullopt};
        if (a.getMask())
          in.mask = shapeOf(a.getMask());
        if (a.getBias())
          in.bias = shapeOf(a.getBias());
        return shapes::inferAttention(in, diag);
      })
      .Case([&](AttentionGradOp a) {
        return FailureOr<shapes::Shape>(shapes::Shape(shapeOf(a.getQ())));
      })
      .Case([&](SelectOp s) {
        return FailureOr<shapes::Shape>(shapes::Shape(shapeOf(s.getOnTrue())));
      })
      .Case([&](ConstantOp c) {
        return FailureOr<shapes::Shape>(shapes::Shape(c.getType().getShape()));
      })
      .Default([&](Operation *) {
        // Elementwise ops, casts, compares, cumsum and softmax keep the
        // shape of their first operand.
        return FailureOr<shapes::Shape>(
            shapes::Shape(shapeOf(op->getOperand(0))));
      });
}

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
