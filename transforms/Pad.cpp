//===- Pad.cpp - kf-pad: pad the rows of intermediate buffers -------------===//
//
// A buffer whose rows are not a whole number of 16-byte vectors (a row of
// 50257 bf16 logits, the scores of an odd sequence length) starts most of
// its rows off a 16-byte boundary: the kernels that read and write it fall
// back to one element per access, and a tensor-core matmul cannot take it
// as an operand at all (its copies move 16-byte chunks). Buffers between
// kernels are kfuse's own, so their rows can be padded.
//
// Analyse: every kernel result that only other kernels read (what the
// caller gets back keeps the caller's dense layout). Decide: pad its row
// stride to the next multiple of 16 bytes when its producer's template
// writes whole padded rows (zeros past the row's end) and every consumer's
// template addresses it by row and column: row kernels (reductions and
// normalisations along the last axis) and tensor-core matmuls, which take
// it as an operand read from shared memory. Padding that would grow the
// buffer by more than an eighth is not worth it. Rewrite: record the
// strides in the producer's `padded_rows`; kf-tile, kf-promote-shared,
// kf-lower-to-gpu and the runtime (which sizes the buffer) read them.
//
// A bf16/f16 matmul whose operand rows still are not whole 16-byte chunks
// (the caller's input, or a buffer kf-pad could not pad) would run on the
// one-thread-per-output fallback. When the cost model says the copy pays,
// kf-pad copies the operand into a padded buffer first (a pointwise kernel
// whose result has `padded_rows`), and the matmul takes tensor cores. A B
// read as [K, N] gets rows on whole 128-byte lines, which the tensor-core
// template reads at full speed; where its rows are whole vectors off the
// lines, it is copied onto them when the cost model says that pays. With
// allow-tf32 the same holds for an f32 matmul whose operand is not K-major
// (TF32 products take no transposed operands): kf-pad copies it
// transposed (a tiled transpose kernel) and flips the matmul's flag.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFPADPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// `v` spans the whole [rows, length] space of a row kernel.
bool isRowShaped(Value v, RowSpace space) {
  auto type = mlir::cast<RankedTensorType>(v.getType());
  return type.getRank() > 0 && type.getShape().back() == space.length &&
         type.getNumElements() == space.rows * space.length;
}

/// The kernel's row space, when it is a row kernel (kf-tile makes it one:
/// a reduction or normalization along the last axis, not over columns).
std::optional<RowSpace> rowKernelSpace(KernelOp kernel) {
  if (kernel.getKind() != KernelKind::reduction &&
      kernel.getKind() != KernelKind::normalization)
    return std::nullopt;
  if (columnSpaceOf(kernel))
    return std::nullopt;
  return rowSpaceOf(kernel);
}

/// The tensor-core matmul `kernel` is, if any, with the operand row strides
/// decided so far.
MatmulOp tensorCoreMatmul(KernelOp kernel, TargetAttr target) {
  if (kernel.getKind() != KernelKind::matmul)
    return MatmulOp();
  MatmulOp matmul = matmulOf(kernel);
  return tensorCoreRefusal(matmul, target.getAligned(), target.getAllowTF32())
             ? MatmulOp()
             : matmul;
}

/// The producer's template stores result `index` as whole rows of any
/// stride, writing zeros past the row's end.
bool writesPaddedRows(KernelOp producer, unsigned index, TargetAttr target) {
  Value result = producer.getResult(index);
  if (std::optional<RowSpace> space = rowKernelSpace(producer))
    return isRowShaped(result, *space);
  // The tensor-core template stages a padded output tile in shared memory
  // and copies it out in rows: a result alone (besides column partials),
  // as kf-promote-shared then stages it whatever the others' strides.
  auto yield = mlir::cast<YieldOp>(producer.getBody().front().getTerminator());
  bool alone = llvm::all_of(llvm::enumerate(yield.getValues()), [&](auto v) {
    return v.index() == index || columnPartialsSource(v.value());
  });
  return tensorCoreMatmul(producer, target) && alone &&
         isa<FloatType>(getElementTypeOrSelf(result.getType()));
}

/// Operand `index` of `consumer`, padded to `stride`, is read by row and
/// column.
bool readsPaddedRows(KernelOp consumer, unsigned index, int64_t stride,
                     TargetAttr target) {
  BlockArgument arg = consumer.getBody().getArgument(index);
  if (std::optional<RowSpace> space = rowKernelSpace(consumer))
    return isRowShaped(arg, *space);
  if (consumer.getKind() != KernelKind::matmul)
    return false;
  // A tensor-core operand, copied to shared memory in 16-byte chunks of
  // its rows: padding may be what lets the matmul take tensor cores.
  MatmulOp matmul = matmulOf(consumer);
  if (!llvm::all_of(arg.getUsers(),
                    [&](Operation *user) { return user == matmul; }))
    return false;
  return !tensorCoreRefusal(matmul, target.getAligned(), target.getAllowTF32(),
                            {{arg, stride}});
}

/// A tensor-core matmul's B (as [K, N]) is read at full speed only where
/// each of its rows starts on a 128-byte line. H100, bf16 4096 x N x 4096
/// (ms): N = 4096 0.177; 4104, whose rows start 16 bytes apart from line
/// to line, 0.338; B copied into rows of 4160 first, 0.024-0.031 + 0.238
/// -0.241. The same with B given as [N, K] (rows of K, on the lines) is
/// 0.260, and writing its result in rows on the lines gains nothing
/// (0.263-0.268); nor do A's rows (K = 4104: 0.187).
constexpr int64_t kMatmulRowLineBytes = 128;

/// The row stride that pads `length` elements of `elementBytes` to whole
/// 128-byte lines, or to whole 16-byte vectors where lines would grow the
/// row by more than an eighth.
int64_t paddedRowLength(int64_t length, int64_t elementBytes) {
  int64_t line = kMatmulRowLineBytes / elementBytes,
          vector = 16 / elementBytes;
  int64_t lines = (length + line - 1) / line * line;
  return 8 * (lines - length) <= length
             ? lines
             : (length + vector - 1) / vector * vector;
}

/// Whether copying a tensor-core matmul's B of `copyBytes` into rows on
/// 128-byte lines pays: the copy (read and written at 3 TB/s, plus a
/// launch) against the quarter of the matmul's time (at 600 TFLOP/s) that
/// rows off the lines cost.
bool lineCopyPays(MatmulOp matmul, int64_t copyBytes) {
  MatmulProblem p = MatmulProblem::of(matmul);
  double flops = 2.0 * p.batch * p.m * p.n * p.k;
  return 2.0 * copyBytes / 3e12 + 4e-6 < 0.25 * flops / 600e12;
}

/// Estimated seconds of `matmul` on the one-thread-per-output fallback
/// against tensor cores after copying operands of `copyBytes` into padded
/// buffers (read and written, plus a launch). Rates measured on the H200
/// (bench/NOTES.md): the fallback reaches about 20 TFLOP/s, the tensor-core
/// template 400 and more, copies 3 TB/s.
bool paddedCopyPays(MatmulOp matmul, int64_t copyBytes) {
  MatmulProblem p = MatmulProblem::of(matmul);
  double flops = 2.0 * p.batch * p.m * p.n * p.k;
  double fallback = flops / 20e12;
  double tensorCores = flops / 400e12 + 2.0 * copyBytes / 3e12 + 4e-6;
  return tensorCores < fallback;
}

/// Makes `kernel` read argument `arg` from a copy with rows `stride`
/// elements apart, zeros past each row's end: a pointwise kernel.
void copyIntoPaddedRows(KernelOp kernel, BlockArgument arg, int64_t stride) {
  unsigned number = arg.getArgNumber();
  Value source = kernel.getInputs()[number];
  OpBuilder b(kernel);
  auto copy = KernelOp::create(b, kernel.getLoc(), TypeRange{source.getType()},
                               ValueRange{source}, KernelKind::pointwise);
  Block *block = b.createBlock(&copy.getBody());
  YieldOp::create(b, kernel.getLoc(),
                  block->addArgument(source.getType(), source.getLoc()));
  copy.setPaddedRowsAttr(b.getDenseI64ArrayAttr({stride}));
  kernel->setOperand(number, copy.getResult(0));
}

/// The kernel argument a matmul `operand` reads, when the matmul and views
/// of it are its only users: a copy of it would change nothing else.
BlockArgument copyableOperand(MatmulOp matmul, Value operand) {
  // (A reshape that regroups an operand's rows takes whole 16-byte rows
  // only: its argument needs no copy.)
  auto arg = dyn_cast<BlockArgument>(matmulOperandSource(operand));
  if (!arg || !llvm::all_of(arg.getUsers(), [&](Operation *u) {
        return u == matmul || isMatmulOperandView(u);
      }))
    return BlockArgument();
  return arg;
}

/// Copies the operands of `kernel` (a matmul kernel) whose rows keep it
/// off tensor cores into padded buffers, when that pays; and a B whose
/// rows are whole 16-byte vectors but start off 128-byte lines into rows
/// on them, when that pays.
void copyUnalignedOperands(KernelOp kernel, TargetAttr target) {
  MatmulOp matmul = matmulOf(kernel);
  MatmulProblem problem = MatmulProblem::of(matmul);
  int64_t elementBytes = problem.elementBytes;
  int64_t chunk = 16 / elementBytes, line = kMatmulRowLineBytes / elementBytes;
  SmallVector<std::pair<Value, int64_t>> padded;
  int64_t bytes = 0;
  bool offVectors = false;
  for (Value operand : {matmul.getA(), matmul.getB()}) {
    BlockArgument arg = copyableOperand(matmul, operand);
    if (!arg)
      return;
    auto type = mlir::cast<RankedTensorType>(arg.getType());
    int64_t stride = rowStrideOf(kernel.getInputs()[arg.getArgNumber()]);
    bool rowsOfN = operand == matmul.getB() && !problem.transposeB;
    if ((stride % chunk == 0 && (!rowsOfN || stride % line == 0)) ||
        llvm::any_of(padded, [&](auto &entry) { return entry.first == arg; }))
      continue;
    offVectors |= stride % chunk != 0;
    padded.push_back({arg, rowsOfN ? paddedRowLength(stride, elementBytes)
                                   : (stride + chunk - 1) / chunk * chunk});
    bytes += type.getNumElements() / type.getShape().back() *
             padded.back().second * elementBytes;
  }
  if (padded.empty() ||
      tensorCoreRefusal(matmul, target.getAligned(), target.getAllowTF32(),
                        padded) ||
      !(offVectors ? paddedCopyPays(matmul, bytes)
                   : lineCopyPays(matmul, bytes)))
    return;
  for (auto [operand, stride] : padded)
    copyIntoPaddedRows(kernel, mlir::cast<BlockArgument>(operand), stride);
}

/// Makes `kernel` read argument `arg` from a copy with its last two dims
/// swapped: a pointwise kernel of one transpose (kf-tile's tiled transpose).
void copyTransposed(KernelOp kernel, BlockArgument arg) {
  unsigned number = arg.getArgNumber();
  Value source = kernel.getInputs()[number];
  auto type = mlir::cast<RankedTensorType>(source.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  SmallVector<int64_t> shape(type.getShape());
  std::swap(perm[rank - 2], perm[rank - 1]);
  std::swap(shape[rank - 2], shape[rank - 1]);
  auto transposed = RankedTensorType::get(shape, type.getElementType());
  OpBuilder b(kernel);
  Location loc = kernel.getLoc();
  auto copy = KernelOp::create(b, loc, TypeRange{transposed},
                               ValueRange{source}, KernelKind::pointwise);
  Block *block = b.createBlock(&copy.getBody());
  Value input = block->addArgument(type, source.getLoc());
  YieldOp::create(b, loc,
                  TransposeOp::create(b, loc, transposed, input,
                                      b.getDenseI64ArrayAttr(perm))
                      .getResult());
  kernel->setOperand(number, copy.getResult(0));
  arg.setType(transposed);
}

/// TF32 products read both operands K-major (A as [M, K], B as [N, K]).
/// With allow-tf32, an f32 matmul whose operand runs the other way takes
/// a transposed copy of it, when the tensor cores then take the matmul and
/// the copy pays; otherwise it stays exact on the CUDA cores.
void copyIntoKMajor(KernelOp kernel, TargetAttr target) {
  MatmulOp matmul = matmulOf(kernel);
  MatmulProblem p = MatmulProblem::of(matmul);
  if (!target.getAllowTF32() || !target.getAligned() || p.elementBytes != 4 ||
      (!p.transposeA && p.transposeB) || !p.m || !p.n || p.k % 4)
    return;
  SmallVector<BlockArgument> copied;
  int64_t bytes = 0;
  for (auto [operand, kMajor] : {std::pair(matmul.getA(), !p.transposeA),
                                 std::pair(matmul.getB(), p.transposeB)}) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || !llvm::all_of(arg.getUsers(),
                              [&](Operation *u) { return u == matmul; }))
      return;
    if (kMajor) {
      // Kept as it is: its rows must already be whole 16-byte chunks.
      if (rowStrideOf(kernel.getInputs()[arg.getArgNumber()]) % 4)
        return;
      continue;
    }
    // The same argument as both operands would need both layouts.
    if (matmul.getA() == matmul.getB())
      return;
    copied.push_back(arg);
    bytes += mlir::cast<RankedTensorType>(arg.getType()).getNumElements() * 4;
  }
  if (!paddedCopyPays(matmul, bytes))
    return;
  for (BlockArgument arg : copied)
    copyTransposed(kernel, arg);
  matmul.setTransposeA(false);
  matmul.setTransposeB(true);
}

/// Copies q, k and v of `kernel` (an attention kernel) whose rows have an
/// odd length into padded buffers, when the FlashAttention template then
/// takes it: its copies move whole 4-byte words (16 bytes on the padded
/// rows), and the zeros past each row add nothing to Q K^T or to the
/// value dims that are stored. The copies cost a read and a write of
/// q, k and v; the one-thread-per-output kernel reads K and V once a query.
void copyOddAttentionOperands(KernelOp kernel, TargetAttr target) {
  AttentionOp op = attentionOf(kernel);
  SmallVector<std::pair<Value, int64_t>> padded;
  for (Value operand : {op.getQ(), op.getK(), op.getV()}) {
    // A mask or bias computed from the same argument would read it dense.
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg ||
        !llvm::all_of(arg.getUsers(), [&](Operation *u) { return u == op; }))
      return;
    int64_t stride = rowStrideOf(kernel.getInputs()[arg.getArgNumber()]);
    if (stride % 2 &&
        !llvm::any_of(padded, [&](auto &e) { return e.first == operand; }))
      padded.push_back({arg, (stride + 7) / 8 * 8});
  }
  if (padded.empty() || flashAttentionRefusal(kernel, target.getAligned(),
                                              target.getWgmma(), padded))
    return;
  for (auto [operand, stride] : padded)
    copyIntoPaddedRows(kernel, mlir::cast<BlockArgument>(operand), stride);
}

struct KFPadPass : public kfuse::kf::impl::KFPadPassBase<KFPadPass> {
  using KFPadPassBase::KFPadPassBase;

  void runOnOperation() override {
    target = TargetAttr::of(getOperation());
    // Without aligned base pointers padded rows gain no vectors.
    if (!target.getAligned())
      return;
    // Producers before consumers: a matmul's other operand is decided
    // before the matmul is asked about this one.
    SmallVector<KernelOp> kernels;
    getOperation().walk([&](KernelOp kernel) { kernels.push_back(kernel); });
    for (KernelOp kernel : kernels) {
      if (kernel.getKind() == KernelKind::matmul) {
        copyIntoKMajor(kernel, target);
        copyUnalignedOperands(kernel, target);
      }
      if (kernel.getKind() == KernelKind::attention)
        copyOddAttentionOperands(kernel, target);
      SmallVector<int64_t> strides;
      for (auto [i, result] : llvm::enumerate(kernel.getResults()))
        strides.push_back(decideStride(kernel, i));
      if (llvm::any_of(strides, [](int64_t s) { return s != 0; }))
        kernel.setPaddedRowsAttr(
            DenseI64ArrayAttr::get(&getContext(), strides));
    }
  }

  /// The module's target (kf-attach-target).
  TargetAttr target;

  /// The padded row stride of result `index`, or 0 to keep it dense.
  int64_t decideStride(KernelOp kernel, unsigned index) {
    Value result = kernel.getResult(index);
    auto type = mlir::cast<RankedTensorType>(result.getType());
    Type dtype = type.getElementType();
    if (type.getRank() < 2 || dtype.isInteger(1))
      return 0;
    int64_t length = type.getShape().back();
    int64_t perVector = 16 / (dtype.getIntOrFloatBitWidth() / 8);
    int64_t stride = (length + perVector - 1) / perVector * perVector;
    if (length % perVector == 0 || length == type.getNumElements() ||
        8 * (stride - length) > length)
      return 0;
    if (!writesPaddedRows(kernel, index, target))
      return 0;
    for (OpOperand &use : result.getUses()) {
      auto consumer = dyn_cast<KernelOp>(use.getOwner());
      if (!consumer ||
          !readsPaddedRows(consumer, use.getOperandNumber(), stride, target))
        return 0;
    }
    return stride;
  }
};

} // namespace
