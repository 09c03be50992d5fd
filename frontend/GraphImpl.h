//===- GraphImpl.h - the MLIR behind a kfuse::Graph -------------*- C++ -*-===//
//
// Internal: a Graph owns an MLIRContext and a module holding one func.func
// in the kf dialect. The frontend appends ops to it; the evaluator and the
// compiler read it. Symbolic dims are tracked per value as negative ids
// (see ShapeInference.h), so shape errors can name the symbols.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_FRONTEND_GRAPHIMPL_H
#define KFUSE_FRONTEND_GRAPHIMPL_H

#include "ir/ShapeInference.h"
#include "kfuse/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>

namespace kfuse {

/// A context with every dialect a kf graph uses loaded.
std::unique_ptr<mlir::MLIRContext> createGraphContext();
mlir::Type toMLIRType(mlir::MLIRContext *context, DType dtype);
std::optional<DType> fromMLIRType(mlir::Type type);

namespace detail {

/// The dtype two operands of a binary op promote to (Graph.h says how).
DType promote(DType a, DType b);

struct GraphImpl {
  std::string name;
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// An op handle: const-ness of the GraphImpl does not reach the IR.
  mutable mlir::func::FuncOp func;
  Status status;
  /// Printing uniques attributes in the single-threaded context: compiles
  /// of one graph from several threads print it one at a time.
  std::mutex printMutex;

  /// Per value id: the MLIR value and its shape with symbol ids.
  std::vector<mlir::Value> values;
  std::vector<kf::shapes::Shape> shapes;
  /// Value -> the id of its first Tensor.
  llvm::DenseMap<mlir::Value, int> ids;
  std::vector<std::string> symbolNames;
  llvm::StringMap<int64_t> symbolIds;
  std::vector<std::string> inputNames, outputNames;
  std::vector<int> outputIds;
  /// kf.random ops so far: each gets its own Philox stream.
  int64_t randomStreams = 0;

  explicit GraphImpl(std::string name);

  // Building.
  Tensor wrap(mlir::Value value, kf::shapes::Shape shape);
  mlir::Value value(Tensor t) const { return values[id(t)]; }
  /// The Tensor of a value of this graph (invalid for a value without one).
  Tensor tensorOf(mlir::Value v) {
    auto it = ids.find(v);
    return it == ids.end() ? Tensor() : Tensor(this, it->second);
  }
  const kf::shapes::Shape &shapeOf(Tensor t) const { return shapes[id(t)]; }
  DType dtypeOf(Tensor t) const;
  static int id(Tensor t) { return t.id_; }
  static GraphImpl *of(Tensor t) { return t.graph_; }
  /// The graph all of `tensors` belong to; null (after recording an error
  /// for a mix of graphs) if any is invalid.
  static GraphImpl *graphOf(llvm::StringRef op,
                            std::initializer_list<Tensor> tensors);
  /// Normalises a possibly negative axis; records an error if out of range.
  std::optional<int64_t> normalizeAxis(llvm::StringRef op, int64_t axis,
                                       int64_t rank);

  /// Records the first error ("op: message") and returns an invalid Tensor.
  Tensor fail(llvm::StringRef op, const llvm::Twine &message);
  mlir::OpBuilder builder();
  mlir::Location loc(llvm::StringRef op);

  int64_t symbolId(llvm::StringRef symbol);
  std::string dimName(int64_t dim) const;
  kf::shapes::ShapeDiag diag() const;
  /// The shape with symbols as ids; fails on negative sizes.
  std::optional<kf::shapes::Shape> fromDims(const Shape &dims);
  Shape toDims(const kf::shapes::Shape &shape) const;
  mlir::RankedTensorType tensorType(const kf::shapes::Shape &shape,
                                    DType dtype);
  /// ["M", ""] for a shape with symbols; null when all dims are static.
  mlir::ArrayAttr dimSymbols(const kf::shapes::Shape &shape);

  // Conversions used by many ops.
  Tensor castTo(Tensor t, DType dtype);
  Tensor broadcastTo(Tensor t, const kf::shapes::Shape &shape);
  Tensor scalar(double value, DType dtype);
  /// kfuse::iota on this graph.
  Tensor iota(const Shape &dims, int64_t dim, DType dtype);
};

} // namespace detail
} // namespace kfuse

#endif // KFUSE_FRONTEND_GRAPHIMPL_H
