/*===- kfuse/kfuse_c.h - the kfuse C API ----------------------------------===*
 *
 * The stable ABI of libkfuse.so for other languages (the Python package
 * binds it with ctypes). Plain C: opaque handles, integer tensor ids, error
 * codes. A call that fails returns a status other than KFUSE_OK (or a
 * negative tensor id, or NULL) and leaves its message for
 * kfuse_last_error(), per thread. Strings kfuse returns are the caller's,
 * to free with kfuse_free_string().
 *
 *===----------------------------------------------------------------------===*/

#ifndef KFUSE_KFUSE_C_H
#define KFUSE_KFUSE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a declaration here changes incompatibly. */
#define KFUSE_C_API_VERSION 1
int kfuse_c_api_version(void);
/* kfuse's version, "major.minor.patch" (static storage). */
const char *kfuse_version(void);

typedef enum kfuse_status {
  KFUSE_OK = 0,
  KFUSE_INVALID_GRAPH = 1,    /* a shape, dtype or op error */
  KFUSE_INVALID_ARGUMENT = 2, /* a bad argument: count, shape, dtype, name */
  KFUSE_COMPILE_FAILED = 3,
  KFUSE_NO_DEVICE = 4, /* no CUDA driver or no GPU */
  KFUSE_DEVICE_ERROR = 5,
  KFUSE_IO_ERROR = 6,
} kfuse_status;

/* The message of this thread's last failed call ("" if none). Valid until
 * the thread's next failing call. */
const char *kfuse_last_error(void);
void kfuse_free_string(char *text);

typedef enum kfuse_dtype {
  KFUSE_F32 = 0,
  KFUSE_F16 = 1,
  KFUSE_BF16 = 2,
  KFUSE_I32 = 3,
  KFUSE_I1 = 4,
  KFUSE_I64 = 5,
} kfuse_dtype;

/*===------------------------------------------------------------------===*
 * Graphs. A tensor is an id within its graph (>= 0); ops return -1 on a
 * bad argument. A graph also keeps its first build error (shape or dtype
 * mismatch), which kfuse_graph_status reports and compiling refuses.
 *===------------------------------------------------------------------===*/

typedef struct kfuse_graph_t *kfuse_graph;
typedef int64_t kfuse_tensor;

kfuse_graph kfuse_graph_create(const char *name);
/* Parses kf-dialect MLIR text (its function's arguments and results
 * become the graph's inputs and outputs). */
kfuse_status kfuse_graph_from_mlir(const char *text, kfuse_graph *out);
void kfuse_graph_destroy(kfuse_graph graph);
/* KFUSE_OK, or the graph's first build error. */
kfuse_status kfuse_graph_status(kfuse_graph graph);
kfuse_status kfuse_graph_to_mlir(kfuse_graph graph, char **text);

/* Reverse mode (kfuse/Autodiff.h). kfuse_graph_vjp: a new graph computing
 * `graph`'s outputs and "grad_<x>" for each of the `num_wrt` inputs named
 * (every float input when 0), taking a cotangent input "grad_<y>" for each
 * of the `num_outputs` outputs named (every float output when 0).
 * kfuse_graph_grad: the same for a rank-0 `loss` whose cotangent is 1 (no
 * grad_<loss> input). Destroy the new graph with kfuse_graph_destroy. */
kfuse_status kfuse_graph_vjp(kfuse_graph graph, const char *const *outputs,
                             int64_t num_outputs, const char *const *wrt,
                             int64_t num_wrt, kfuse_graph *out);
kfuse_status kfuse_graph_grad(kfuse_graph graph, const char *loss,
                              const char *const *wrt, int64_t num_wrt,
                              kfuse_graph *out);
/* kfuse_graph_vjp's graph split for training (kfuse::splitVJP): `forward`
 * computes graph's outputs, then the values "saved_<i>" the backward reads;
 * `backward` computes the "grad_<x>" outputs from the inputs `plan` lists.
 * `plan` is JSON: {"backward_inputs": [[source, index], ...], "decisions":
 * [line, ...]}, source "input" (graph's input index), "output" (graph's
 * output), "saved" (saved_<index>) or "cotangent" (of the index-th output
 * differentiated); free it with kfuse_free_string, the graphs with
 * kfuse_graph_destroy. */
kfuse_status kfuse_graph_split_vjp(kfuse_graph graph,
                                   const char *const *outputs,
                                   int64_t num_outputs,
                                   const char *const *wrt, int64_t num_wrt,
                                   kfuse_graph *forward, kfuse_graph *backward,
                                   char **plan);

/* An input of `rank` dims; a dim whose `symbols` entry is non-NULL and
 * non-empty is symbolic (`sizes` ignored there). `symbols` may be NULL. */
kfuse_tensor kfuse_input(kfuse_graph graph, const char *name, kfuse_dtype dtype,
                         int64_t rank, const int64_t *sizes,
                         const char *const *symbols);
kfuse_tensor kfuse_constant(kfuse_graph graph, double value, kfuse_dtype dtype);
kfuse_status kfuse_output(kfuse_graph graph, const char *name,
                          kfuse_tensor value);

/* The graph's inputs (is_output 0) or outputs (1): how many, and each
 * one's name (the graph's storage), dtype and shape (a symbolic dim is
 * -1 in `sizes`; `sizes` holds up to `capacity` dims). */
int64_t kfuse_graph_num_values(kfuse_graph graph, int is_output);
kfuse_status kfuse_graph_value(kfuse_graph graph, int is_output, int64_t index,
                               const char **name, kfuse_dtype *dtype,
                               int64_t *rank, int64_t *sizes, int64_t capacity);
/* A tensor's dtype and shape (sizes as above). */
kfuse_status kfuse_tensor_info(kfuse_graph graph, kfuse_tensor x,
                               kfuse_dtype *dtype, int64_t *rank,
                               int64_t *sizes, int64_t capacity);

/* Elementwise ops by name. Unary: neg abs relu exp log sqrt rsqrt sin cos
 * tanh sigmoid erf gelu silu reciprocal floor round logical_not
 * stop_gradient (x, through which no gradient flows). Binary
 * (broadcasting, promoting): add sub mul div maximum minimum pow mod
 * logical_and logical_or logical_xor, and the comparisons eq ne lt le gt
 * ge (i1 results). */
kfuse_tensor kfuse_unary(kfuse_graph graph, const char *op, kfuse_tensor x);
kfuse_tensor kfuse_binary(kfuse_graph graph, const char *op, kfuse_tensor a,
                          kfuse_tensor b);
kfuse_tensor kfuse_where(kfuse_graph graph, kfuse_tensor cond,
                         kfuse_tensor on_true, kfuse_tensor on_false);
kfuse_tensor kfuse_cast(kfuse_graph graph, kfuse_tensor x, kfuse_dtype dtype);

/* Shapes. A -1 size in kfuse_reshape is not inferred: sizes are exact. */
kfuse_tensor kfuse_reshape(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                           const int64_t *sizes);
kfuse_tensor kfuse_broadcast_to(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                                const int64_t *sizes);
kfuse_tensor kfuse_transpose(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                             const int64_t *perm);
kfuse_tensor kfuse_iota(kfuse_graph graph, int64_t rank, const int64_t *sizes,
                        int64_t dim, kfuse_dtype dtype);

/* Indexing (kfuse/Graph.h says each in full). Negative axes and positions
 * count from the end; out-of-range positions are errors. */
/* x[start:stop:step] along `axis`; has_stop 0: to the end. */
kfuse_tensor kfuse_slice(kfuse_graph graph, kfuse_tensor x, int64_t axis,
                         int64_t start, int has_stop, int64_t stop,
                         int64_t step);
kfuse_tensor kfuse_concat(kfuse_graph graph, int64_t count,
                          const kfuse_tensor *tensors, int64_t axis);
/* `widths` holds (before, after) for each of x's `rank` dims, first dim
 * first. */
kfuse_tensor kfuse_pad(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                       const int64_t *widths, double value);
/* NumPy's take (embedding lookup) and take_along_axis; i32 or i64
 * indices, out-of-range ones give NaN (floats) or 0. */
kfuse_tensor kfuse_gather(kfuse_graph graph, kfuse_tensor x,
                          kfuse_tensor indices, int64_t axis);
kfuse_tensor kfuse_take_along_axis(kfuse_graph graph, kfuse_tensor x,
                                   kfuse_tensor indices, int64_t axis);
/* gather's transpose (torch.index_add into zeros, an embedding's
 * gradient): `updates` (pre + indices.shape + post) added into `size` rows
 * along `axis` (pre + [size] + post); indices in [-size, 0) count from the
 * end, others out of range add nothing. 16-bit updates are summed in f32. */
kfuse_tensor kfuse_index_add(kfuse_graph graph, kfuse_tensor updates,
                             kfuse_tensor indices, int64_t axis, int64_t size);
/* Uniform [0, 1) from Philox seeded by `seed` (a rank-0 i32 tensor). */
kfuse_tensor kfuse_rand(kfuse_graph graph, kfuse_tensor seed, int64_t rank,
                        const int64_t *sizes, kfuse_dtype dtype);
kfuse_tensor kfuse_dropout(kfuse_graph graph, kfuse_tensor x,
                           kfuse_tensor seed, double p);

/* Reductions by name (sum max min mean logsumexp) over `axes` (all if
 * num_axes 0). */
kfuse_tensor kfuse_reduce(kfuse_graph graph, const char *op, kfuse_tensor x,
                          int64_t num_axes, const int64_t *axes, int keep_dims);
/* The i64 position of the max (op "argmax") or min ("argmin") along `axis`,
 * the first of equal ones, a NaN winning. */
kfuse_tensor kfuse_arg_reduce(kfuse_graph graph, const char *op,
                              kfuse_tensor x, int64_t axis, int keep_dims);
/* The inclusive running sum along `axis`, in x's dtype. */
kfuse_tensor kfuse_cumsum(kfuse_graph graph, kfuse_tensor x, int64_t axis);
kfuse_tensor kfuse_softmax(kfuse_graph graph, kfuse_tensor x, int64_t axis);
/* result_dtype < 0: the operands' dtype. */
kfuse_tensor kfuse_matmul(kfuse_graph graph, kfuse_tensor a, kfuse_tensor b,
                          int transpose_a, int transpose_b, int result_dtype);
/* mask and bias < 0: none; has_scale 0: 1/sqrt(head dim). With `lse`
 * non-NULL, also the rows' log-sum-exp. */
kfuse_tensor kfuse_attention(kfuse_graph graph, kfuse_tensor q, kfuse_tensor k,
                             kfuse_tensor v, kfuse_tensor mask,
                             kfuse_tensor bias, int has_scale, double scale,
                             int causal, kfuse_tensor *lse);

/*===------------------------------------------------------------------===*
 * Host tensors: row-major, contiguous, i1 one byte an element.
 *===------------------------------------------------------------------===*/

typedef struct kfuse_host_tensor {
  void *data;
  kfuse_dtype dtype;
  int64_t rank;
  const int64_t *sizes;
} kfuse_host_tensor;

/* The float64 reference evaluator: outputs in kfuse_graph_num_values(g, 1)
 * order, each allocated by kfuse (its data and sizes freed with
 * kfuse_host_tensor_free). */
kfuse_status kfuse_evaluate(kfuse_graph graph, const kfuse_host_tensor *inputs,
                            int64_t num_inputs, kfuse_host_tensor *outputs,
                            int64_t num_outputs);
void kfuse_host_tensor_free(kfuse_host_tensor *tensor);

/*===------------------------------------------------------------------===*
 * Compiling and running.
 *===------------------------------------------------------------------===*/

/* kfuse::Launch: how a run enqueues the kernels of its specialisation. */
typedef enum kfuse_launch {
  KFUSE_LAUNCH_AUTO = 0,    /* a CUDA graph where the driver has them */
  KFUSE_LAUNCH_KERNELS = 1, /* one launch per kernel */
  KFUSE_LAUNCH_GRAPH = 2,   /* one CUDA graph per specialisation */
} kfuse_launch;

typedef struct kfuse_compile_options {
  const char *arch; /* NULL: "sm_90" */
  int unfused;      /* one kernel per op: the baseline */
  int pad_rows;
  int allow_tf32;
  int split_k;
  int disk_cache;
  const char *cache_dir; /* NULL: the default */
  int launch; /* a kfuse_launch: how runs enqueue their kernels (an int, so
                 that a value outside the enum is an error, not undefined) */
  /* Symbolic dims whose sizes change from call to call, comma-separated
     ("L" or "L,B"; NULL: none): kfuse::CompileOptions::dynamicDims. */
  const char *dynamic_dims;
  int split_keys; /* kfuse::CompileOptions::splitKeys */
  int deterministic; /* kfuse::CompileOptions::deterministic */
  int attention_grad_tma; /* kfuse::CompileOptions::attentionGradTma */
} kfuse_compile_options;

/* The defaults of kfuse::CompileOptions. */
kfuse_compile_options kfuse_default_compile_options(void);

typedef struct kfuse_executable_t *kfuse_executable;

/* options NULL: the defaults. Works without a GPU. */
kfuse_status kfuse_compile(kfuse_graph graph,
                           const kfuse_compile_options *options,
                           kfuse_executable *out);
void kfuse_executable_destroy(kfuse_executable exe);
int64_t kfuse_executable_num_inputs(kfuse_executable exe);
int64_t kfuse_executable_num_outputs(kfuse_executable exe);

/* The shapes of the outputs for inputs of these shapes (num_inputs 0: the
 * graph's own): output i's rank in ranks[i] and its sizes in
 * sizes[8 * i ...]. Input i's shape is input_sizes[i][0 .. input_ranks[i]). */
kfuse_status kfuse_executable_output_shapes(kfuse_executable exe,
                                            const int64_t *input_ranks,
                                            const int64_t *const *input_sizes,
                                            int64_t num_inputs, int64_t *ranks,
                                            int64_t *sizes,
                                            int64_t num_outputs);

/* The specialisations compiled so far, as a JSON array of objects
 * {"shapes": [[...], ...], "runtime_sizes": bool, "reason": "..."}:
 * kfuse::Executable::specializations. Free the text with kfuse_free_string. */
kfuse_status kfuse_executable_specializations(kfuse_executable exe,
                                              char **json);

/* A stage's text (graph, fused, gpu, llvm, ptx) for the graph's shapes. */
kfuse_status kfuse_executable_dump(kfuse_executable exe, const char *stage,
                                   char **text);

/* Device tensors: `data` is a CUdeviceptr, row-major and contiguous;
 * `bytes` the size of its buffer where known (0: unknown). */
typedef struct kfuse_device_tensor {
  void *data;
  kfuse_dtype dtype;
  int64_t rank;
  const int64_t *sizes;
  size_t bytes;
} kfuse_device_tensor;

/* Enqueues a run on `stream` (a CUstream; NULL: the default stream). */
kfuse_status kfuse_run(kfuse_executable exe, const kfuse_device_tensor *inputs,
                       int64_t num_inputs, const kfuse_device_tensor *outputs,
                       int64_t num_outputs, void *stream);
/* Copies host inputs in, runs, and copies the outputs (allocated by kfuse,
 * freed with kfuse_host_tensor_free) back. Needs a GPU. */
kfuse_status kfuse_run_host(kfuse_executable exe,
                            const kfuse_host_tensor *inputs, int64_t num_inputs,
                            kfuse_host_tensor *outputs, int64_t num_outputs);

/* Runs every kernel `repetitions` times on these device tensors, timed
 * with CUDA events, and places each on the roofline: a JSON array of
 * {name, ms, bytes, flops, gb_per_s, tflop_per_s, bound,
 * roofline_fraction}. */
kfuse_status kfuse_profile(kfuse_executable exe,
                           const kfuse_device_tensor *inputs,
                           int64_t num_inputs,
                           const kfuse_device_tensor *outputs,
                           int64_t num_outputs, int repetitions, char **json);

/* kfuse::testing::checkFusion: the graph compiled fused and unfused, both
 * run on the same fresh random inputs and compared with the reference
 * evaluator, and timed. `shapes` as in kfuse_executable_output_shapes
 * (num_inputs 0: the graph's own); seed 0: a fresh one. The report is a
 * JSON object {passed, values_match, fused_not_slower, seed, fused_kernels,
 * unfused_kernels, fused_ms, unfused_ms, outputs: [{name, dtype,
 * fused_error, unfused_error, tolerance, passed}], summary}. Needs a GPU. */
kfuse_status kfuse_check_fusion(kfuse_graph graph, const int64_t *input_ranks,
                                const int64_t *const *input_sizes,
                                int64_t num_inputs, uint64_t seed,
                                int64_t reduction_length, int allow_tf32,
                                int time, char **json);

/* Process-wide compile and cache counters. */
typedef struct kfuse_cache_stats {
  uint64_t compiles, memory_hits, disk_hits, disk_rejected;
} kfuse_cache_stats;
kfuse_cache_stats kfuse_get_cache_stats(void);

/* Each producer-consumer decision of the fused partition and each
 * attention rewrite, as text lines or (json != 0) a JSON array. */
kfuse_status kfuse_explain_fusion(kfuse_graph graph, int unfused, int json,
                                  char **text);

#ifdef __cplusplus
}
#endif

#endif /* KFUSE_KFUSE_C_H */
