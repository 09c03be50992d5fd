//===- Tile.cpp - kf-tile: choose each kernel's launch shape --------------===//
//
// Analyse: the kernel's work (elements, or rows of a row space) and the
// widest 16-byte vector every buffer it touches allows. Decide:
//  - pointwise: `vec` elements per thread step, 256 threads, a grid that
//    covers the vectors once;
//  - row kernels (normalisations and last-axis reductions): one block per
//    row with enough threads that each holds about 4 vectors, the row kept
//    in registers when that is at most 32 values a thread (else looped);
//  - the rest: one thread per item.
// Rewrite: record the choice in the kernel's config.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "passes/Passes.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFTILEPASS
#include "passes/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

static ArrayRef<int64_t> shapeOf(Value v) {
  return mlir::cast<RankedTensorType>(v.getType()).getShape();
}

std::optional<RowSpace> kfuse::kf::rowSpaceOf(KernelOp kernel) {
  std::optional<RowSpace> space;
  bool ok = true;
  auto addRows = [&](Value input) {
    ArrayRef<int64_t> shape = shapeOf(input);
    if (shape.empty()) {
      ok = false;
      return;
    }
    int64_t length = shape.back();
    int64_t rows = length ? mlir::cast<RankedTensorType>(input.getType())
                                    .getNumElements() /
                                length
                          : 0;
    if (space && (space->rows != rows || space->length != length))
      ok = false;
    space = RowSpace{rows, length};
  };
  kernel.getBody().walk([&](Operation *op) {
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      int64_t rank = shapeOf(reduce.getInput()).size();
      if (reduce.getAxes().size() != 1 || reduce.getAxes()[0] != rank - 1 ||
          !isa<FloatType>(reduce.getType().getElementType()))
        ok = false;
      addRows(reduce.getInput());
    } else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      if (softmax.getAxis() != static_cast<int64_t>(shapeOf(softmax).size()) - 1)
        ok = false;
      addRows(softmax.getInput());
    }
  });
  if (!ok || !space)
    return std::nullopt;
  return space;
}

std::optional<RowSpace> kfuse::kf::columnSpaceOf(KernelOp kernel) {
  if (kernel.getKind() != KernelKind::reduction)
    return std::nullopt;
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  auto reduce = yield.getValues()[0].getDefiningOp<ReduceOp>();
  if (!reduce || !isa<FloatType>(reduce.getType().getElementType()) ||
      &kernel.getBody().front().front() != reduce.getOperation())
    return std::nullopt;
  ArrayRef<int64_t> axes = reduce.getAxes(), in = shapeOf(reduce.getInput());
  int64_t rows = 1;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis != static_cast<int64_t>(i))
      return std::nullopt; // not a prefix of the dims
    rows *= in[axis];
  }
  int64_t columns = 1;
  for (size_t d = axes.size(); d < in.size(); ++d)
    columns *= in[d];
  if (columns < 32)
    return std::nullopt;
  return RowSpace{rows, columns};
}

TransposeOp kfuse::kf::tiledTransposeOf(KernelOp kernel) {
  if (kernel.getKind() != KernelKind::pointwise)
    return nullptr;
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  TransposeOp found;
  int count = 0;
  kernel.getBody().walk([&](TransposeOp t) {
    ++count;
    found = t;
  });
  if (count != 1 || !isa<BlockArgument>(found.getInput()) ||
      found.getType().getElementType().isInteger(1) ||
      yield.getValues().size() != 1 ||
      shapeOf(yield.getValues()[0]) != shapeOf(found.getResult()))
    return nullptr;
  ArrayRef<int64_t> perm = found.getPerm();
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return nullptr;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return nullptr;
  return found;
}

int64_t kfuse::kf::kernelWorkItems(KernelOp kernel) {
  if (kernel.getKind() == KernelKind::reduction ||
      kernel.getKind() == KernelKind::normalization)
    if (std::optional<RowSpace> rows = rowSpaceOf(kernel))
      return rows->rows;
  auto resultType = mlir::cast<RankedTensorType>(kernel.getResult(0).getType());
  int64_t elements = resultType.getNumElements();
  if (kernel.getKind() != KernelKind::normalization)
    return elements;
  // A softmax along another axis: one thread per row.
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  auto softmax = yield.getValues()[0].getDefiningOp<SoftmaxOp>();
  int64_t rowLength = resultType.getDimSize(softmax.getAxis());
  return rowLength ? elements / rowLength : 0;
}

namespace {

/// Elements per 16-byte access that every buffer of the kernel allows.
/// Vectors of i1 are bit-packed in LLVM, not byte arrays: no vectors there.
int64_t vectorWidth(KernelOp kernel) {
  int64_t bytes = 1;
  for (Type t : llvm::concat<const Type>(kernel.getInputs().getTypes(),
                                         kernel.getResultTypes())) {
    Type dtype = mlir::cast<RankedTensorType>(t).getElementType();
    if (dtype.isInteger(1))
      return 1;
    bytes = std::max<int64_t>(bytes, dtype.getIntOrFloatBitWidth() / 8);
  }
  return 16 / bytes;
}

struct KFTilePass : public kfuse::kf::impl::KFTilePassBase<KFTilePass> {
  using KFTilePassBase::KFTilePassBase;

  void runOnOperation() override {
    if (blockSize <= 0 || blockSize > 1024 || sms <= 0) {
      getOperation().emitError()
          << "kf-tile: block-size must be in 1..1024 and sms positive";
      return signalPassFailure();
    }
    getOperation().walk([&](KernelOp kernel) {
      Builder b(kernel);
      SmallVector<NamedAttribute> config;
      auto set = [&](StringRef name, int64_t value) {
        config.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
      };
      int64_t items = kernelWorkItems(kernel);
      int64_t vec = aligned ? vectorWidth(kernel) : 1;
      std::optional<RowSpace> rows =
          kernel.getKind() == KernelKind::reduction ||
                  kernel.getKind() == KernelKind::normalization
              ? rowSpaceOf(kernel)
              : std::nullopt;
      std::optional<RowSpace> columns = columnSpaceOf(kernel);
      TransposeOp transpose = tiledTransposeOf(kernel);
      if (columns) {
        // 32 columns by 32 row groups a block; a block per 32 columns.
        set("block", 1024);
        set("grid", std::min<int64_t>((columns->length + 31) / 32, INT32_MAX));
        set("items", columns->length);
        set("columns", 1);
      } else if (transpose) {
        // 32x32 tiles through shared memory, 8 rows of threads.
        ArrayRef<int64_t> out = shapeOf(transpose.getResult());
        int64_t r = out.size();
        int64_t tiles = ((out[r - 2] + 31) / 32) * ((out[r - 1] + 31) / 32);
        for (int64_t d = 0; d + 2 < r; ++d)
          tiles *= out[d];
        set("block", 256);
        set("grid", std::min<int64_t>(tiles, INT32_MAX));
        set("items", tiles);
        set("tiled_transpose", 1);
      } else if (rows) {
        while (vec > 1 && rows->length % vec)
          vec /= 2;
        int64_t vectors = std::max<int64_t>(1, rows->length / vec);
        int64_t threads = 32;
        while (threads < 1024 && threads * 4 < vectors)
          threads *= 2;
        int64_t chunks = (vectors + threads - 1) / threads;
        set("block", threads);
        // A block per row: the hardware balances rows across the SMs
        // better than a grid-stride loop over waves of resident blocks.
        set("grid", std::min<int64_t>(rows->rows, INT32_MAX));
        set("items", rows->rows);
        set("vec", vec);
        set("chunks", chunks);
        set("in_registers", chunks * vec <= 32);
      } else if (kernel.getKind() == KernelKind::pointwise) {
        int64_t elements = items;
        while (vec > 1 && elements % vec)
          vec /= 2;
        // Large kernels of 16-bit data take two vectors a thread step: more
        // bytes in flight. (For f32, measured on the H200, one is faster.)
        int64_t unroll =
            vec >= 8 && elements >= (1 << 20) && (elements / vec) % 2 == 0 ? 2
                                                                           : 1;
        int64_t steps = elements / vec / unroll;
        set("block", blockSize);
        set("grid",
            std::min<int64_t>((steps + blockSize - 1) / blockSize, INT32_MAX));
        set("items", elements);
        set("vec", vec);
        set("unroll", unroll);
      } else {
        set("block", blockSize);
        set("grid", std::min((items + blockSize - 1) / blockSize, sms * 32));
        set("items", items);
      }
      set("aligned", aligned ? 16 : 0);
      kernel.setConfigAttr(b.getDictionaryAttr(config));
    });
  }
};

} // namespace
