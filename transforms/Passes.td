//===- Passes.td - kfuse's graph passes --------------------*- tablegen -*-===//
//
// The graph passes: each decides on kf IR (what to specialise, rewrite,
// fuse, pad, split, tile, promote) and records its decision there. def
// KF<Name>Pass, argument kf-<name>, implemented in transforms/<Name>.cpp
// and tested in tests/lit/passes/kf-<name>.mlir. The lowering passes are
// in codegen/Passes.td; the pass order lives in compiler/PassPipeline.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KF_TRANSFORMS_PASSES
#define KF_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def KFSpecializePass
    : Pass<"kf-specialize", "mlir::ModuleOp"> {
  let summary = "Bind symbolic dims to the concrete shapes of one call";
  let description = [{
    The JIT step: a graph written for `tensor<?x64xf32>` with its dim named
    `M` is compiled for the shapes of the call at hand. Symbols are bound
    from `shapes` (one shape per function argument, in order) and from
    `bind` (explicit `NAME=SIZE` pairs); every result type is then
    recomputed by the ops' shape rules and `dim_symbols` annotations that
    are fully bound are dropped.

    Before, with shapes="128x64":
    ```mlir
    func.func @f(%x: tensor<?x64xf32> {kf.dim_symbols = ["M", ""]})
        -> tensor<?x64xf32> {
      %y = kf.exp %x : tensor<?x64xf32>
      return %y : tensor<?x64xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<128x64xf32>) -> tensor<128x64xf32> {
      %y = kf.exp %x : tensor<128x64xf32>
      return %y : tensor<128x64xf32>
    }
    ```
    A symbol bound to two sizes, a static dim given another size, or a
    symbol left unbound is an error naming the dim and both sizes.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "one shape per argument, e.g. 128x64 (a scalar is '')">,
    ListOption<"bind", "bind", "std::string",
               "symbol bindings NAME=SIZE, e.g. M=128">,
  ];
}

def KFAttachTargetPass : Pass<"kf-attach-target", "mlir::ModuleOp"> {
  let summary = "Record the GPU the module is compiled for as `kf.target`";
  let description = [{
    Sets the module's `kf.target` attribute (KFAttrs.td), which every pass
    that decides for a target reads: kf-pad, kf-split-k, kf-tile,
    kf-promote-shared and kf-lower-to-gpu. The pipeline runs it once,
    first among the kernel stages; in a test it stands in for the
    compiler's options.

    After, with aligned=true wgmma=true:
    ```mlir
    module attributes {kf.target = #kf.target<aligned = true, wgmma = true>}
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "the PTX target (sm_90, sm_90a, ...)">,
    Option<"sms", "sms", "int64_t", /*default=*/"132",
           "streaming multiprocessors on the target GPU">,
    Option<"aligned", "aligned", "bool", /*default=*/"false",
           "every buffer starts on a 16-byte boundary (allows vectors)">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"false",
           "the target has Hopper's warpgroup MMA (sm_90a)">,
    Option<"allowTF32", "allow-tf32", "bool", /*default=*/"false",
           "f32 matmuls may take TF32 tensor cores">,
    Option<"unorderedAdds", "unordered-adds", "bool", /*default=*/"false",
           "kernels may add partial results in any order (not deterministic)">,
  ];
  // They read `kf.target`, which needs the dialect loaded.
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFRematerializePass : Pass<"kf-rematerialize", "mlir::ModuleOp"> {
  let summary = "Recompute cheap element-by-element values in each consumer";
  let description = [{
    An op computed element by element (elementwise ops, casts, broadcasts,
    constants, iotas, selects) with several users, whose cone of such ops
    (at most 12) reads no more bytes than its result has, is cloned before
    each user but the first: kf-fuse then computes each copy in its
    consumer's kernel instead of writing the value once and reading it
    back in each. A broadcast row statistic, a weight vector stretched to
    the rows, a widening cast of a 16-bit tensor: all cheaper to compute
    again than to read. For fused compiles only (the unfused baseline
    materialises every op). A value a comparison reads (through views and
    casts) is copied only where the copy is exact (views, casts, sign
    changes): a kernel keeps 16-bit intermediates in f32, so a copy of
    sin(x) would equal none of the rounded values a max was taken over,
    and the max's gradient compares them. The default pipeline runs it on
    every value: a backward's statistics and widening casts feed row
    kernels and column sums (LayerNorm's backward: 10 kernels without it,
    5 with). `attention-only` limits it to the values that only what
    attention kernels compute in place reads: masks and biases, computed
    per score, and q's prologue, computed once a block. In either mode a
    reshape that matmuls read in place (one that regroups the rows of a
    16-bit operand) is cloned for each matmul that reads it: it costs
    nothing, and kf-fuse puts each copy in its matmul's kernel.

    Before:
    ```mlir
    %w = kf.broadcast %v : tensor<1024xf32> -> tensor<4096x1024xf32>
    %a = kf.mul %x, %w : tensor<4096x1024xf32>
    %s = kf.reduce sum %a [0] : tensor<4096x1024xf32> -> tensor<1024xf32>
    %b = kf.add %y, %w : tensor<4096x1024xf32>
    ```
    After:
    ```mlir
    %w = kf.broadcast %v : tensor<1024xf32> -> tensor<4096x1024xf32>
    %a = kf.mul %x, %w : tensor<4096x1024xf32>
    %s = kf.reduce sum %a [0] : tensor<4096x1024xf32> -> tensor<1024xf32>
    %w2 = kf.broadcast %v : tensor<1024xf32> -> tensor<4096x1024xf32>
    %b = kf.add %y, %w2 : tensor<4096x1024xf32>
    ```
  }];
  let options = [
    Option<"attentionOnly", "attention-only", "bool", /*default=*/"false",
           "only values that attention kernels alone compute in place "
           "(masks, biases, q's prologue)">,
  ];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFOnlineSoftmaxPass : Pass<"kf-online-softmax", "mlir::ModuleOp"> {
  let summary = "Rewrite attention written from primitives into kf.attention";
  let description = [{
    Finds matmul(softmax(scale * Q K^T [+ bias] [masked]), V) in its usual
    spellings: the scale on Q, on K or on the scores (a multiply or a
    divide by a positive constant); K^T by the matmul's flag or a
    transpose; softmax as kf.softmax or as exp(s - max s) / sum exp(s -
    max s) along the keys; a causal mask as a select to -inf on
    compare(iota rows, iota columns); K and V heads repeated for
    grouped-query attention; float casts between the stages. It becomes one
    kf.attention, so the S x S scores never reach memory.

    Before:
    ```mlir
    %s = kf.matmul %q, %k {transpose_b = true} : ... -> tensor<4x16x2048x2048xf32>
    %t = kf.mul %s, %c : tensor<4x16x2048x2048xf32>
    %p = kf.softmax %t {axis = 3} : tensor<4x16x2048x2048xf32>
    %pb = kf.cast %p : tensor<4x16x2048x2048xf32> -> tensor<4x16x2048x2048xbf16>
    %o = kf.matmul %pb, %v : ... -> tensor<4x16x2048x64xbf16>
    ```
    After:
    ```mlir
    %o = kf.attention %q, %k, %v {scale = 1.250000e-01 : f64} : ...
    ```
    It does not fire where the meaning would change: a negative scale, a
    scale applied to the bias too, a mask that is not causal with the
    exp/max/sum/div softmax (whose fully masked rows are NaN, not 0), or
    scores and probabilities that are also used elsewhere. Such a
    near-match keeps the reason as `kf.online_softmax` on the product.
    Unfused compiles skip this pass: they are the materialised baseline.
  }];
}

def KFSplitReductionPass : Pass<"kf-split-reduction", "mlir::ModuleOp"> {
  let summary = "Reduce few long rows in two steps, so that they fill the GPU";
  let description = [{
    A row kernel gives each row one block: a reduction of fewer rows than
    the GPU holds blocks (the sum of a whole tensor, 64 rows of 2^20)
    leaves most SMs idle and each block streams a long row alone. A
    reduction along the last axis of R rows of length L, with R below four
    blocks an SM (read from `kf.target`) and L at least twice a chunk of
    8192 elements, becomes a reduction of the rows viewed as [R, k, L / k]
    (k the smallest divisor of L that makes at least four blocks an SM
    with chunks of 8192 or more, else the largest with such chunks)
    followed by a reduction of the k partial results. 16-bit sums and means
    take their partial results in f32 (a cast the first kernel computes in
    registers). Mean of equal chunks' means is the mean. Reductions whose
    result is broadcast back over their rows (normalisations) and lengths
    with no such divisor stay as they are. For fused compiles only.

    Before:
    ```mlir
    %s = kf.reduce sum %x [1] : tensor<4x1048576xf32> -> tensor<4xf32>
    ```
    After (132 SMs):
    ```mlir
    %v = kf.reshape %x : tensor<4x1048576xf32> -> tensor<4x128x8192xf32>
    %p = kf.reduce sum %v [2] : tensor<4x128x8192xf32> -> tensor<4x128xf32>
    %s = kf.reduce sum %p [1] : tensor<4x128xf32> -> tensor<4xf32>
    ```
  }];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFSeparateRowSumsPass : Pass<"kf-separate-row-sums", "mlir::ModuleOp"> {
  let summary = "Split a sum that waits on another sum of its rows into sums that do not";
  let description = [{
    A row kernel reduces each of its reductions in a block-wide round of
    shuffles and barriers, and a reduction whose input needs another
    one's result waits for that round first. A LayerNorm backward's two
    sums are such a chain: the second sums terms scaled by a row scalar
    computed from the first. Sums are linear: sum(a + b) = sum(a) + sum(b),
    sum(-a) = -sum(a), and sum(s * a) = s * sum(a) for an `s` constant
    along the reduced axes (a broadcast of a value per row, a splat
    constant). A sum or mean of f32 with static shapes whose input
    expands so into terms is rewritten into the terms' sums, combined
    per row, where that shortens its chain of reductions in a row (counted
    through elementwise ops, broadcasts and reshapes); the row kernel then
    reduces the independent sums together. At most four distinct terms.
    For fused compiles only; the sums round differently, within f32.

    Before:
    ```mlir
    %f = kf.broadcast %s : tensor<8x1xf32> -> tensor<8x256xf32>
    %t = kf.mul %f, %z : tensor<8x256xf32>
    %u = kf.add %a, %t : tensor<8x256xf32>
    %r = kf.reduce sum %u [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
    ```
    After:
    ```mlir
    %ra = kf.reduce sum %a [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
    %rz = kf.reduce sum %z [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
    %m = kf.mul %s, %rz : tensor<8x1xf32>
    %r = kf.add %ra, %m : tensor<8x1xf32>
    ```
  }];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFAtomicDqPass : Pass<"kf-atomic-dq", "mlir::ModuleOp"> {
  let summary = "Let attention backward's key blocks add up dq (not deterministic)";
  let description = [{
    Rewrites each `kf.attention_grad` of f16 or bf16 operands with head
    dims up to 128 to produce dq in f32, followed by a `kf.cast` to dq's
    old type. kf-tile then gives the kernel only key blocks, each adding
    its keys' share of every query tile's dq into the f32 buffer with
    atomics (FlashGradTilingAttr's `dqAtomic`), and the launch zeroes that
    buffer first. Faster (no query blocks recomputing the probabilities),
    but the adds come in any order: dq's last bits change from run to run.
    Only where `kf.target` allows unordered adds (the compile is not
    `deterministic`); before kf-fuse.

    Before:
    ```mlir
    %dq, %dk, %dv = kf.attention_grad ... -> tensor<4x16x2048x64xbf16>, ...
    ```
    After:
    ```mlir
    %acc, %dk, %dv = kf.attention_grad ... -> tensor<4x16x2048x64xf32>, ...
    %dq = kf.cast %acc : tensor<4x16x2048x64xf32> -> tensor<4x16x2048x64xbf16>
    ```
  }];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFSplitKeysPass : Pass<"kf-split-keys", "mlir::ModuleOp"> {
  let summary = "Split the keys of attentions with few query tiles (flash-decoding)";
  let description = [{
    FlashAttention gives each block 128 query rows of one head and streams
    all of its keys through them. A decode step (one query row a head, 32
    heads) then has 32 blocks, each streaming thousands of keys alone while
    most SMs idle. An attention without mask, bias or causal masking, of
    static shapes that do not change at run time, with fewer blocks than
    the GPU has SMs (read from `kf.target`) and at least 512 keys, becomes
    an attention over n chunks of the keys at once followed by their
    combination:

      - the keys and values viewed as n times the kv heads ([B, Hkv * n,
        Sk / n, D], a reshape: each new head is one chunk of an old one),
        the queries broadcast to each chunk's heads;
      - one attention with f32 results and each row's log-sum-exp;
      - the chunks' results weighted by the softmax of their log-sum-exps
        and summed: the softmax over all the keys. Its rows (the n chunks
        of one output element) take the shape of the result, or of a
        reshape that alone reads it (heads merged), so that kf-fuse makes
        the combination and the cast after it one row kernel writing what
        its readers take.

    n is the divisor of Sk with chunks of 256 keys or more that makes the
    fewest waves of blocks times keys a block (the smallest such). An
    attention with an `lse` result (a forward a backward reads, or a
    split), or whose k or v is a view (it may not stay one once split),
    stays as it is. For fused compiles only, before kf-fuse.

    Before (32 heads, 8 kv heads, 132 SMs):
    ```mlir
    %o = kf.attention %q, %k, %v {scale = 0.088 : f64}
        : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>,
          tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16>
    ```
    After (4 chunks of 1024 keys: 128 blocks):
    ```mlir
    %k4 = kf.reshape %k : tensor<1x8x4096x128xbf16> -> tensor<1x32x1024x128xbf16>
    %q4 = (q as [1, 8, 1, 4, 128], broadcast to [1, 8, 4, 4, 128], as [1, 128, 1, 128])
    %o4, %lse = kf.attention %q4, %k4, %v4 ... -> tensor<1x128x1x128xf32>, tensor<1x128x1xf32>
    %w = kf.softmax (lse as rows [1, 32, 1, 128, 4]) {axis = 4}
    %s = kf.reduce sum (%w * %o4 as rows [1, 32, 1, 128, 4]) [4]
    %o = kf.cast %s : tensor<1x32x1x128xf32> -> tensor<1x32x1x128xbf16>
    ```
  }];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFFusePass : Pass<"kf-fuse", "mlir::ModuleOp"> {
  let summary = "Partition the graph into kf.kernel regions";
  let description = [{
    Groups ops into kernels, each of one kind (pointwise, reduction,
    normalization, matmul, attention). In `unfused` mode every op is its own
    kernel: the baseline that fusion is measured against. In `fused` mode a
    pointwise op (elementwise math, casts, compares, selects, broadcasts,
    transposes, reshapes, iota) joins the kernel of its consumers when all of
    them are in one pointwise kernel, so chains run as one pass over memory.
    Splat constants are cloned into every kernel that reads them. Row ops
    keep their rows on chip for a pointwise consumer; a matmul takes its
    elementwise consumers as its epilogue, and reshapes that regroup the
    rows of a 16-bit operand as views it reads in place; an attention takes
    views of q, k and v, a prologue on q, and the merge of its heads. A
    value the graph returns joins the kernel that reads it only where that
    kernel writes it too: a value per row of a row kernel (statistics that
    a training forward saves). `--explain-fusion` gives the reason for
    every edge, fused or not.

    Before:
    ```mlir
    %e = kf.exp %x : tensor<64xf32>
    %y = kf.mul %e, %e : tensor<64xf32>
    ```
    After (fused):
    ```mlir
    %y = kf.kernel pointwise(%x : tensor<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %e = kf.exp %a : tensor<64xf32>
      %m = kf.mul %e, %e : tensor<64xf32>
      kf.yield %m : tensor<64xf32>
    } -> (tensor<64xf32>)
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"fused\"",
           "fused or unfused">,
  ];
}

def KFPadPass : Pass<"kf-pad", "mlir::ModuleOp"> {
  let summary = "Pad the rows of intermediate buffers to 16 bytes";
  let description = [{
    For every kernel result that only other kernels read, whose rows are
    not a whole number of 16-byte vectors: when the producer's template
    writes whole rows (row kernels, tensor-core matmuls) and every consumer
    addresses the buffer by row and column (row kernels, tensor-core matmul
    operands), pads its row stride to the next multiple of 16 bytes, with
    zeros past each row's end. Padding that would grow a buffer by more
    than an eighth is skipped. The strides go into the producer's
    `padded_rows` (one per result, 0 for a dense one). Rows then start on
    16-byte boundaries: row kernels use vectors on them, and a matmul whose
    operand rows were odd can use tensor cores.

    A kernel argument whose rows keep a tensor-core matmul off tensor
    cores (where a cost model says the copy pays), or an attention off the
    FlashAttention template (odd head dims, with `wgmma`), is copied into a
    padded buffer by a pointwise kernel first.

    Before:
    ```mlir
    %s = kf.kernel matmul(%q, %k : ...) { ... } -> (tensor<2047x2047xbf16>)
    %p = kf.kernel normalization(%s : tensor<2047x2047xbf16>) { ... }
    ```
    After:
    ```mlir
    %s = kf.kernel matmul(%q, %k : ...) attributes
        {padded_rows = array<i64: 2048>} { ... } -> (tensor<2047x2047xbf16>)
    ```
  }];
  // They read `kf.target`, which needs the dialect loaded.
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFFuseColumnSumsPass : Pass<"kf-fuse-column-sums", "mlir::ModuleOp"> {
  let summary = "Sum columns in the matmul or row kernel that has the rows";
  let description = [{
    A bias gradient sums a matmul's output gradient over its rows. Where a
    tensor-core matmul kernel's f32 result is read by such column sums (a
    reduction kernel summing an elementwise function of it over all rows)
    and perhaps by one cast to 16 bits, each sum's prologue and its sums
    over every 16 rows (`kColumnPartialRows`, one warp's rows of the
    template, summed with shuffles) join the matmul kernel, which yields
    them as [rows / 16, N] f32 partials beside its result; the reduction
    kernel sums the partials. The cast becomes the matmul kernel's result
    when nothing else reads the f32 one, which is then never written. Runs
    after kf-fuse (fused mode only) and before kf-pad.

    After:
    ```mlir
    %mm:2 = kf.kernel matmul(%dy, %w, %h : ...) {
      %0 = kf.matmul %a, %b {transpose_b = true} : ... -> tensor<8192x4096xf32>
      %1 = kf.mul %0, %gelu_grad : tensor<8192x4096xf32>
      %2 = kf.cast %1 : tensor<8192x4096xf32> -> tensor<8192x4096xbf16>
      %3 = kf.reshape %1 : tensor<8192x4096xf32> -> tensor<512x16x4096xf32>
      %4 = kf.reduce sum %3 [1] : tensor<512x16x4096xf32> -> tensor<512x4096xf32>
      kf.yield %2, %4 : tensor<8192x4096xbf16>, tensor<512x4096xf32>
    }
    %db = kf.kernel reduction(%mm#1 : tensor<512x4096xf32>) {
      kf.reduce sum %p [0] : tensor<512x4096xf32> -> tensor<4096xf32>
    }
    ```

    A LayerNorm's or RMSNorm's backward: where reduction kernels sum an
    elementwise function of inputs a normalization kernel reads (dy * x_hat,
    dy) over all the rows of its row space, their prologues join the row
    kernel, which yields each sum over the rows of each of its thread blocks
    (`BlockColumnPartials`: a reshape to [steps, blocks, rowsPerBlock, N]
    summed over dims 0 and 2, `columnPartialLayout` choosing blocks and
    rows); kf-tile gives it that grid, and the row template carries the
    sums across its grid-stride loop in registers.
  }];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFSplitKPass : Pass<"kf-split-k", "mlir::ModuleOp"> {
  let summary = "Split the K of tensor-core matmuls that leave SMs idle";
  let description = [{
    A tensor-core matmul kernel whose output tiles fill at most half the
    GPU's block slots (decode-sized M) and whose K spans enough steps becomes
    two kernels: a matmul kernel computing f32 partial sums over chunks of
    K (kf.matmul's `k_chunk`, a multiple of the tile's K step), and a
    reduction kernel summing them and computing the epilogue the matmul
    kernel had. Runs after kf-pad and before kf-tile.

    After:
    ```mlir
    %p = kf.kernel matmul(%x, %w : tensor<16x4096xbf16>, tensor<4096x4096xbf16>) {
      %0 = kf.matmul %a, %b {k_chunk = 2048 : i64, transpose_b = true}
          : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2x16x4096xf32>
      ...
    }
    %y = kf.kernel reduction(%p : tensor<2x16x4096xf32>) { kf.reduce sum ... }
    ```
  }];
  // They read `kf.target`, which needs the dialect loaded.
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFTilePass : Pass<"kf-tile", "mlir::ModuleOp"> {
  let summary = "Choose each kernel's launch and its template's tiling";
  let description = [{
    Records on every kf.kernel a `#kf.launch` (threads per block, blocks,
    work items: elements, rows or outputs, by template) and, where a
    template tiles the work, its `tiling` (KFAttrs.td). Pointwise kernels
    step `vector` elements a thread (16 bytes where the target's buffers
    are aligned), `unroll` vectors at a time for large tensors
    (`#kf.pointwise_tiling`); kernels whose reductions and softmaxes run
    along the last axis get one block per row (`#kf.row_tiling`: `chunks`
    vectors a thread, `inRegisters` when the row stays in registers); a
    reduction of leading dims and a transpose of the last two dims go
    through shared-memory tiles (`#kf.column_tiling`,
    `#kf.transpose_tiling`). A bf16/f16 matmul on aligned buffers (f32
    where the target allows TF32) gets a tensor-core block tile
    (`#kf.mma_tiling`, wgmma where the target has it), the one whose waves
    of resident blocks on the SMs take the least estimated time; any other
    matmul says why in `no_tensor_cores`. Attention on wgmma targets gets
    FlashAttention's tiles (`#kf.flash_tiling`). kf-lower-to-gpu reads
    these and decides nothing.

    After:
    ```mlir
    kf.kernel pointwise(...) attributes {
        launch = #kf.launch<grid = 1, block = 256, items = 1024>,
        tiling = #kf.pointwise_tiling<vector = 4>}
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block of the templates that take an item a thread">,
  ];
  // They read `kf.target`, which needs the dialect loaded.
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFPromoteSharedPass : Pass<"kf-promote-shared", "mlir::ModuleOp"> {
  let summary = "Decide what tensor-core matmuls and FlashAttention stage in shared memory";
  let description = [{
    For every matmul kernel that kf-tile gave a `#kf.mma_tiling`, decides
    its `#kf.mma_pipeline`: both operands' block tiles are staged (each
    mma.sync row padded by 16 bytes, so that the rows one ldmatrix reads
    fall on distinct banks; wgmma tiles are swizzled instead), in as many
    stages of asynchronous copies (2 to 4: `stages`) as fit half a
    multiprocessor's shared memory and the K steps there are. When output
    rows have an odd length (so pairs of 16-bit results cannot be stored
    from registers), the output tile is staged there too, to leave in
    coalesced rows (`stageOutput`). A wgmma matmul with more tiles than
    SMs, four stages and room for the staged output in the last two
    becomes `persistent` (grid = SMs): the next tile's first copies
    overlap this tile's epilogue. With the `tma` option, a wgmma matmul
    whose A has a tile's rows at least is warp-specialised instead
    (`tma`, block = 384): a third warpgroup copies both operands with the
    TMA into up to 8 stages that mbarriers hand over, each multiplying
    warpgroup keeps two K steps of products in flight (`mmaGroups`, fewer
    than `stages`), the output is staged 128 columns at a time past them,
    and the block loops over tiles (grid = SMs at most). Where that
    output's rows are not whole 16-byte vectors, its tiles take rows
    `rowGroups` apart, each group's columns shifted so that its rows start
    on `rowAlign`-element (128- or 16-byte) boundaries (the launch's items
    count the tiles that makes).

    A FlashAttention kernel (`#kf.flash_tiling`) keeps its Q tile and two
    stages of K and V tiles, and of a bias or mask input with whole
    16-byte rows (`stageScoresInput`); with `tma`, head dims of 128 or
    more and nothing staged, a third warpgroup copies Q, K and V with the
    TMA (`tma`, block = 384): its `#kf.flash_pipeline`. FlashAttention's
    backward (`#kf.flash_grad_tiling`) keeps its own 128 rows and two
    stages of the streamed tiles; with `grad-tma`, where it is
    deterministic and the TMA can copy q, k, v and dO, a third warpgroup
    copies them into three stages where they fit: its
    `#kf.flash_grad_pipeline`. Records the
    dynamic shared memory the launch needs (the launch's `sharedBytes`).
    Other kernels are untouched.

    After:
    ```mlir
    kf.kernel matmul(...) attributes {
        launch = #kf.launch<grid = 128, block = 256, items = 128,
                            sharedBytes = 111104>,
        pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true>,
        tiling = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 32,
                                warpsM = 2, warpsN = 2, groupM = 8>}
    ```
  }];
  let options = [
    Option<"tma", "tma", "bool", /*default=*/"true",
           "warp-specialise wgmma matmuls around TMA copies">,
    Option<"gradTma", "grad-tma", "bool", /*default=*/"false",
           "warp-specialise FlashAttention's deterministic backward around "
           "TMA copies (off until measured on the GPU)">,
  ];
  // They read `kf.target`, which needs the dialect loaded.
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

def KFRuntimeExtentsPass : Pass<"kf-runtime-extents", "mlir::ModuleOp"> {
  let summary = "Let kernels take the sizes of dims that change at run time";
  let description = [{
    A function argument's `kf.runtime_dims` (array<i64>) names dims whose
    size changes from call to call (a KV cache growing by one token a
    step); the graph was specialised with a representative size there (the
    bucket, a power of two, that the call's size falls in). Where every
    kernel that reads the argument can take that size as a parameter, the
    pass records the (input, dim) pair in the kernel's `runtime_extents`,
    and the runtime passes the call's size: one compile serves every size
    of the bucket. Today the FlashAttention template takes one: its key
    length, read from its K (and V) arguments.

    Where some reader cannot (another template, a mask over the keys, the
    argument returned or viewed), nothing is recorded and the module gets
    `kf.runtime_refusal`, a string naming the argument, dim and reader: the
    compiler then specialises that dim exactly.

    After (the cache's dim 2 taken at run time):
    ```mlir
    %0 = kf.kernel attention(%q, %cache_k, %cache_v : ...) attributes {
        ..., runtime_extents = array<i64: 1, 2>, ...}
    ```
  }];
  let dependentDialects = ["kfuse::kf::KFDialect"];
}

#endif // KF_TRANSFORMS_PASSES
