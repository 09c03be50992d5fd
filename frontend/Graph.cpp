//===- Graph.cpp - kfuse::Graph over the kf dialect -----------------------===//

#include "frontend/GraphImpl.h"
#include "ir/SpecializeShapes.h"
#include "ir/KFDialect.h"
#include "kfuse/kfuse.h"

#include "llvm/ADT/StringSet.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace shapes = kfuse::kf::shapes;

namespace kfuse {

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::f16:
    return "f16";
  case DType::bf16:
    return "bf16";
  case DType::i32:
    return "i32";
  case DType::i1:
    return "i1";
  case DType::i64:
    return "i64";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1,
                  DType::i64})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::f16:
  case DType::bf16:
    return 2;
  case DType::i1:
    return 1;
  case DType::i64:
    return 8;
  }
  return 0;
}

bool isFloat(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

std::string shapeString(const Shape &shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "x" : "") + shape[i].str();
  return out.empty() ? "a scalar" : out;
}

std::unique_ptr<MLIRContext> createGraphContext() {
  auto context = std::make_unique<MLIRContext>(MLIRContext::Threading::DISABLED);
  context->loadDialect<kf::KFDialect, func::FuncDialect>();
  return context;
}

Type toMLIRType(MLIRContext *context, DType dtype) {
  Builder b(context);
  switch (dtype) {
  case DType::f32:
    return b.getF32Type();
  case DType::f16:
    return b.getF16Type();
  case DType::bf16:
    return b.getBF16Type();
  case DType::i32:
    return b.getI32Type();
  case DType::i1:
    return b.getI1Type();
  case DType::i64:
    return b.getI64Type();
  }
  return {};
}

std::optional<DType> fromMLIRType(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    type = tensor.getElementType();
  if (type.isF32())
    return DType::f32;
  if (type.isF16())
    return DType::f16;
  if (type.isBF16())
    return DType::bf16;
  if (type.isInteger(32))
    return DType::i32;
  if (type.isInteger(1))
    return DType::i1;
  if (type.isInteger(64))
    return DType::i64;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// GraphImpl
//===----------------------------------------------------------------------===//

namespace detail {

GraphImpl::GraphImpl(std::string graphName)
    : name(std::move(graphName)), context(createGraphContext()) {
  OpBuilder b(context.get());
  module = ModuleOp::create(b, b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  std::string symbol = name;
  for (char &c : symbol)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  if (symbol.empty() || isdigit(static_cast<unsigned char>(symbol[0])))
    symbol = "g_" + symbol;
  func = func::FuncOp::create(b, b.getUnknownLoc(), symbol,
                              b.getFunctionType({}, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, b.getUnknownLoc());
}

Tensor GraphImpl::wrap(Value value, shapes::Shape shape) {
  // A static size whose bytes overflow 64 bits would wrap every index.
  shapes::Shape staticDims;
  for (int64_t d : shape)
    if (!shapes::isSymbolic(d))
      staticDims.push_back(d);
  std::optional<int64_t> elements = shapes::elementCount(staticDims);
  int64_t bytes;
  if (!elements ||
      llvm::MulOverflow(*elements, static_cast<int64_t>(dtypeSize(
                                       *fromMLIRType(value.getType()))),
                        bytes)) {
    Operation *op = value.getDefiningOp();
    return fail(op ? op->getName().stripDialect() : "input",
                "a tensor of " + diag().str(shape) +
                    " has more bytes than 64 bits can count");
  }
  ids.try_emplace(value, static_cast<int>(values.size()));
  values.push_back(value);
  shapes.push_back(std::move(shape));
  return Tensor(this, static_cast<int>(values.size()) - 1);
}

DType GraphImpl::dtypeOf(Tensor t) const {
  return *fromMLIRType(value(t).getType());
}

Tensor GraphImpl::fail(StringRef op, const Twine &message) {
  if (status.isOk())
    status = Error(ErrorCode::InvalidGraph, (op + ": " + message).str());
  return Tensor();
}

OpBuilder GraphImpl::builder() {
  OpBuilder b(context.get());
  b.setInsertionPoint(func.getBody().front().getTerminator());
  return b;
}

Location GraphImpl::loc(StringRef op) {
  return NameLoc::get(StringAttr::get(context.get(), op));
}

int64_t GraphImpl::symbolId(StringRef symbol) {
  auto [it, inserted] =
      symbolIds.try_emplace(symbol, -static_cast<int64_t>(symbolNames.size()) - 1);
  if (inserted)
    symbolNames.push_back(symbol.str());
  return it->second;
}

std::string GraphImpl::dimName(int64_t dim) const {
  if (dim == shapes::kUnknown)
    return "?";
  if (shapes::isSymbolic(dim))
    return symbolNames[-dim - 1];
  return std::to_string(dim);
}

shapes::ShapeDiag GraphImpl::diag() const {
  return shapes::ShapeDiag(
      [this](int64_t d) { return dimName(d); });
}

std::optional<shapes::Shape> GraphImpl::fromDims(const Shape &dims) {
  shapes::Shape out;
  for (const Dim &d : dims) {
    if (d.isSymbolic())
      out.push_back(symbolId(d.symbol()));
    else if (d.size() < 0)
      return std::nullopt;
    else
      out.push_back(d.size());
  }
  return out;
}

Shape GraphImpl::toDims(const shapes::Shape &shape) const {
  Shape out;
  for (int64_t d : shape)
    out.push_back(shapes::isSymbolic(d) ? Dim(dimName(d)) : Dim(d));
  return out;
}

RankedTensorType GraphImpl::tensorType(const shapes::Shape &shape,
                                       DType dtype) {
  SmallVector<int64_t> dims;
  for (int64_t d : shape)
    dims.push_back(shapes::isSymbolic(d) ? ShapedType::kDynamic : d);
  return RankedTensorType::get(dims, toMLIRType(context.get(), dtype));
}

ArrayAttr GraphImpl::dimSymbols(const shapes::Shape &shape) {
  if (llvm::none_of(shape, shapes::isSymbolic))
    return nullptr;
  Builder b(context.get());
  SmallVector<Attribute> names;
  for (int64_t d : shape)
    names.push_back(b.getStringAttr(shapes::isSymbolic(d) ? dimName(d) : ""));
  return b.getArrayAttr(names);
}

Tensor GraphImpl::castTo(Tensor t, DType dtype) {
  if (!t.isValid() || dtypeOf(t) == dtype)
    return t;
  OpBuilder b = builder();
  Value cast = kf::CastOp::create(b, loc("cast"),
                                  tensorType(shapeOf(t), dtype), value(t));
  return wrap(cast, shapeOf(t));
}

Tensor GraphImpl::broadcastTo(Tensor t, const shapes::Shape &shape) {
  if (!t.isValid() || shapeOf(t) == shape)
    return t;
  OpBuilder b = builder();
  auto op = kf::BroadcastOp::create(b, loc("broadcast"),
                                    tensorType(shape, dtypeOf(t)), value(t),
                                    dimSymbols(shape));
  return wrap(op, shape);
}

Tensor GraphImpl::scalar(double v, DType dtype) {
  OpBuilder b = builder();
  auto type = tensorType({}, dtype);
  Attribute element =
      isFloat(dtype)
          ? Attribute(b.getFloatAttr(type.getElementType(), v))
          : Attribute(b.getIntegerAttr(type.getElementType(),
                                       static_cast<int64_t>(v)));
  auto attr = DenseElementsAttr::get(type, element);
  return wrap(kf::ConstantOp::create(b, loc("constant"), type, attr), {});
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Tensor and Graph
//===----------------------------------------------------------------------===//

DType Tensor::dtype() const {
  return isValid() ? graph_->dtypeOf(*this) : DType::f32;
}

Shape Tensor::shape() const {
  return isValid() ? graph_->toDims(graph_->shapeOf(*this)) : Shape();
}

Graph::Graph(std::string name)
    : impl_(std::make_unique<detail::GraphImpl>(std::move(name))) {}
Graph::~Graph() = default;
Graph::Graph(Graph &&) noexcept = default;
Graph &Graph::operator=(Graph &&) noexcept = default;

const Status &Graph::status() const { return impl_->status; }
const std::string &Graph::name() const { return impl_->name; }

Tensor Graph::input(const std::string &name, DType dtype, const Shape &shape) {
  detail::GraphImpl &g = *impl_;
  if (name.empty() || llvm::is_contained(g.inputNames, name))
    return g.fail("input", name.empty() ? "an input needs a name"
                                        : "input '" + name + "' is declared twice");
  std::optional<shapes::Shape> dims = g.fromDims(shape);
  if (!dims)
    return g.fail("input", "input '" + name + "' has a negative dim in " +
                               shapeString(shape));
  // Through the function interface, so argument attributes stay in step.
  unsigned index = g.func.getNumArguments();
  (void)g.func.insertArgument(index, g.tensorType(*dims, dtype),
                              DictionaryAttr(), g.loc("input"));
  BlockArgument arg = g.func.getArgument(index);
  Builder b(g.context.get());
  g.func.setArgAttr(arg.getArgNumber(), "kf.name", b.getStringAttr(name));
  if (ArrayAttr symbols = g.dimSymbols(*dims))
    g.func.setArgAttr(arg.getArgNumber(), kf::kDimSymbolsAttr, symbols);
  g.inputNames.push_back(name);
  return g.wrap(arg, *dims);
}

Tensor Graph::constant(double value, DType dtype) {
  return impl_->scalar(value, dtype);
}

void Graph::output(const std::string &name, Tensor value) {
  detail::GraphImpl &g = *impl_;
  if (!value.isValid())
    return (void)g.fail("output", "output '" + name + "' is an invalid tensor");
  if (detail::GraphImpl::of(value) != &g)
    return (void)g.fail("output", "output '" + name +
                                      "' comes from another graph");
  if (name.empty() || llvm::is_contained(g.outputNames, name))
    return (void)g.fail("output", name.empty()
                                      ? "an output needs a name"
                                      : "output '" + name + "' is declared twice");
  Operation *ret = g.func.getBody().front().getTerminator();
  SmallVector<Value> results(ret->getOperands());
  results.push_back(g.value(value));
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret->getLoc(), results);
  ret->erase();
  unsigned index = g.func.getNumResults();
  (void)g.func.insertResult(index, g.value(value).getType(), DictionaryAttr());
  g.func.setResultAttr(index, "kf.name", b.getStringAttr(name));
  g.outputNames.push_back(name);
  g.outputIds.push_back(detail::GraphImpl::id(value));
}

static std::vector<TensorInfo> infos(const detail::GraphImpl &g,
                                     TypeRange types,
                                     const std::vector<std::string> &names,
                                     function_ref<Shape(unsigned)> shapeOf) {
  std::vector<TensorInfo> out;
  for (auto [i, type] : llvm::enumerate(types))
    out.push_back({names[i], *fromMLIRType(type), shapeOf(i)});
  return out;
}

std::vector<TensorInfo> Graph::inputs() const {
  detail::GraphImpl &g = *impl_;
  Block &entry = g.func.getBody().front();
  return infos(g, entry.getArgumentTypes(), g.inputNames, [&](unsigned i) {
    auto it = g.ids.find(entry.getArgument(i));
    return it == g.ids.end() ? Shape() : g.toDims(g.shapes[it->second]);
  });
}

std::vector<TensorInfo> Graph::outputs() const {
  detail::GraphImpl &g = *impl_;
  return infos(g, g.func.getResultTypes(), g.outputNames, [&](unsigned i) {
    return g.toDims(g.shapes[g.outputIds[i]]);
  });
}

Expected<std::string> Graph::toMLIR() const {
  if (!impl_->status)
    return impl_->status.error();
  std::lock_guard<std::mutex> lock(impl_->printMutex);
  std::string text;
  llvm::raw_string_ostream os(text);
  impl_->module->print(os);
  return text;
}

/// Checks that `func` is a graph kfuse can run: tensor arguments and results
/// of kfuse's dtypes, and nothing but kf ops inside.
static LogicalResult checkGraphFunction(func::FuncOp func) {
  auto checkTypes = [&](TypeRange types, StringRef what) -> LogicalResult {
    for (auto [i, type] : llvm::enumerate(types))
      if (!isa<RankedTensorType>(type) || !fromMLIRType(type))
        return func.emitError() << what << " " << i << " has type " << type
                                << "; kfuse graphs take ranked tensors of "
                                   "f32, f16, bf16, i32, i64 or i1";
    return success();
  };
  if (failed(checkTypes(func.getArgumentTypes(), "argument")) ||
      failed(checkTypes(func.getResultTypes(), "result")))
    return failure();
  // Arguments are bound by name at run time: a name may not repeat.
  for (auto [kind, count, nameOf] :
       {std::tuple{"input", func.getNumArguments(),
                   std::function<StringAttr(unsigned)>([&](unsigned i) {
                     return func.getArgAttrOfType<StringAttr>(i, "kf.name");
                   })},
        std::tuple{"output", func.getNumResults(),
                   std::function<StringAttr(unsigned)>([&](unsigned i) {
                     return func.getResultAttrOfType<StringAttr>(i, "kf.name");
                   })}}) {
    llvm::StringSet<> seen;
    for (unsigned i = 0; i < count; ++i)
      if (StringAttr name = nameOf(i); name && !seen.insert(name).second)
        return func.emitError() << kind << " name '" << name.getValue()
                                << "' is given twice";
  }
  WalkResult walk = func.walk([](Operation *op) {
    // Kernels are what the compiler makes of a graph, not part of one.
    if (isa<kf::KernelOp, kf::YieldOp>(op)) {
      op->emitError() << "'" << op->getName()
                      << "' is made by the compiler; a graph holds no kernels";
      return WalkResult::interrupt();
    }
    if (isa<kf::KFDialect>(op->getDialect()) || isa<func::ReturnOp>(op) ||
        isa<func::FuncOp>(op))
      return WalkResult::advance();
    op->emitError() << "'" << op->getName()
                    << "' is not a kf op; kfuse graphs hold only kf ops";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// Gives every op result in `entry` a Tensor with its symbolic shape,
/// inferred by the op's shape rule from its operands', so that frontend
/// functions (autodiff's rules among them) can build on any value of a
/// parsed graph.
static LogicalResult adoptOps(detail::GraphImpl &g, Block &entry) {
  auto shapeOf = [&](Value v) -> ArrayRef<int64_t> {
    return g.shapes[g.ids.lookup(v)];
  };
  auto namedDim = [&](unsigned, StringRef symbol) -> FailureOr<int64_t> {
    return symbol.empty() ? shapes::kUnknown : g.symbolId(symbol);
  };
  for (Operation &op : entry.without_terminator()) {
    shapes::ShapeDiag diag = g.diag();
    FailureOr<shapes::Shape> shape =
        kf::inferResultShape(&op, shapeOf, namedDim, diag);
    if (failed(shape)) {
      op.emitOpError() << diag.message();
      return failure();
    }
    if (!g.wrap(op.getResult(0), *shape).isValid())
      return failure();
    // kf.attention_grad's dk and dv: the shapes of k and v.
    if (auto grad = dyn_cast<kf::AttentionGradOp>(op))
      for (unsigned i : {1u, 2u})
        if (!g.wrap(op.getResult(i),
                    shapes::Shape(shapeOf(grad->getOperand(i))))
                 .isValid())
          return failure();
    // kf.attention's log-sum-exp: one per query row.
    if (op.getNumResults() == 2 &&
        !g.wrap(op.getResult(1), shapes::Shape(ArrayRef(*shape).drop_back()))
             .isValid())
      return failure();
  }
  return success();
}

/// Fills the frontend's tables (names, symbolic shapes, outputs) from a
/// parsed function.
static LogicalResult adoptFunction(detail::GraphImpl &g, func::FuncOp func) {
  g.func = func;
  g.name = func.getSymName().str();
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = func.getArgAttrOfType<StringAttr>(i, "kf.name");
    g.inputNames.push_back(name ? name.str() : "arg" + std::to_string(i));
    auto symbols = func.getArgAttrOfType<ArrayAttr>(i, kf::kDimSymbolsAttr);
    shapes::Shape shape(mlir::cast<RankedTensorType>(arg.getType()).getShape());
    for (auto [d, size] : llvm::enumerate(shape))
      if (ShapedType::isDynamic(size) && symbols && d < symbols.size())
        size = g.symbolId(mlir::cast<StringAttr>(symbols[d]).getValue());
    if (!g.wrap(arg, shape).isValid())
      return failure();
  }
  if (failed(adoptOps(g, entry)))
    return failure();
  for (auto [i, result] :
       llvm::enumerate(entry.getTerminator()->getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(i, "kf.name");
    g.outputNames.push_back(name ? name.str() : "out" + std::to_string(i));
    // Every argument and op result has a Tensor by now.
    g.outputIds.push_back(g.ids.lookup(result));
  }
  return success();
}

Expected<Graph> Graph::fromMLIR(std::string_view text,
                                std::string_view bufferName) {
  Graph graph;
  detail::GraphImpl &g = *graph.impl_;
  g.module = nullptr;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text.data(), text.size()),
                                           llvm::StringRef(bufferName.data(),
                                                           bufferName.size())),
      llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  SourceMgrDiagnosticHandler handler(sourceMgr, g.context.get(), os);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, g.context.get());
  auto fail = [&](std::string fallback) {
    return Error(ErrorCode::InvalidGraph,
                 diagnostics.empty() ? fallback : diagnostics);
  };
  if (!module)
    return fail(std::string(bufferName) + ": not a valid kf graph");
  auto funcs = llvm::to_vector(module->getOps<func::FuncOp>());
  if (funcs.size() != 1)
    return Error(ErrorCode::InvalidGraph,
                 std::string(bufferName) + ": expected one func.func, found " +
                     std::to_string(funcs.size()));
  if (failed(checkGraphFunction(funcs.front())))
    return fail(std::string(bufferName) + ": not a kfuse graph");
  g.module = std::move(module);
  if (failed(adoptFunction(g, funcs.front())))
    return g.status ? fail(std::string(bufferName) + ": a shape does not follow")
                    : g.status.error();
  return graph;
}

Expected<Graph> Graph::fromFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return Error(ErrorCode::IOError,
                 "cannot read '" + path + "': " + buffer.getError().message());
  return fromMLIR((*buffer)->getBuffer(), path);
}

} // namespace kfuse
