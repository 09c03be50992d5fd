/* The C API from C: a graph built, checked, evaluated, compiled and dumped,
 * and bad input refused with a status and a message, never a crash. Runs
 * without a GPU; exits 1 naming the first check that failed. */

#include "kfuse/kfuse_c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, kfuse_last_error());                            \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* y = exp(x * 2 + 1) and s = sum(y, axis 1), on f32 [4, 8]. */
static kfuse_graph buildGraph(void) {
  kfuse_graph g = kfuse_graph_create("capi");
  int64_t sizes[2] = {4, 8};
  kfuse_tensor x = kfuse_input(g, "x", KFUSE_F32, 2, sizes, NULL);
  kfuse_tensor two = kfuse_constant(g, 2.0, KFUSE_F32);
  kfuse_tensor one = kfuse_constant(g, 1.0, KFUSE_F32);
  kfuse_tensor y = kfuse_unary(
      g, "exp", kfuse_binary(g, "add", kfuse_binary(g, "mul", x, two), one));
  int64_t axis = 1;
  kfuse_tensor s = kfuse_reduce(g, "sum", y, 1, &axis, 0);
  CHECK(x >= 0 && y >= 0 && s >= 0);
  CHECK(kfuse_output(g, "y", y) == KFUSE_OK);
  CHECK(kfuse_output(g, "s", s) == KFUSE_OK);
  return g;
}

static void checkGraph(kfuse_graph g) {
  CHECK(kfuse_graph_status(g) == KFUSE_OK);
  CHECK(kfuse_graph_num_values(g, 0) == 1);
  CHECK(kfuse_graph_num_values(g, 1) == 2);
  const char *name = NULL;
  kfuse_dtype dtype;
  int64_t rank = 0, sizes[8];
  CHECK(kfuse_graph_value(g, 1, 1, &name, &dtype, &rank, sizes, 8) == KFUSE_OK);
  CHECK(name && strcmp(name, "s") == 0);
  CHECK(dtype == KFUSE_F32 && rank == 1 && sizes[0] == 4);
  char *mlir = NULL;
  CHECK(kfuse_graph_to_mlir(g, &mlir) == KFUSE_OK);
  CHECK(mlir && strstr(mlir, "kf.exp") && strstr(mlir, "kf.reduce sum"));
  kfuse_free_string(mlir);
}

static void checkEvaluate(kfuse_graph g) {
  float data[32];
  for (int i = 0; i < 32; ++i)
    data[i] = (float)(i % 7) * 0.125f - 0.375f;
  int64_t sizes[2] = {4, 8};
  kfuse_host_tensor in = {data, KFUSE_F32, 2, sizes};
  kfuse_host_tensor out[2];
  CHECK(kfuse_evaluate(g, &in, 1, out, 2) == KFUSE_OK);
  CHECK(out[0].rank == 2 && out[0].sizes[0] == 4 && out[0].sizes[1] == 8);
  CHECK(out[1].rank == 1 && out[1].sizes[0] == 4);
  const float *y = (const float *)out[0].data, *s = (const float *)out[1].data;
  for (int r = 0; r < 4; ++r) {
    double sum = 0;
    for (int c = 0; c < 8; ++c) {
      double expected = exp(2.0 * data[r * 8 + c] + 1.0);
      CHECK(fabs(y[r * 8 + c] - expected) <= 1e-6 * expected);
      sum += expected;
    }
    CHECK(fabs(s[r] - sum) <= 1e-5 * sum);
  }
  kfuse_host_tensor_free(&out[0]);
  kfuse_host_tensor_free(&out[1]);
}

static void checkCompile(kfuse_graph g) {
  kfuse_compile_options options = kfuse_default_compile_options();
  options.disk_cache = 0;
  kfuse_executable exe = NULL;
  kfuse_cache_stats before = kfuse_get_cache_stats();
  CHECK(kfuse_compile(g, &options, &exe) == KFUSE_OK);
  if (!exe)
    return;
  kfuse_cache_stats after = kfuse_get_cache_stats();
  CHECK(after.compiles + after.memory_hits >
        before.compiles + before.memory_hits);
  CHECK(kfuse_executable_num_inputs(exe) == 1);
  CHECK(kfuse_executable_num_outputs(exe) == 2);
  char *ptx = NULL;
  CHECK(kfuse_executable_dump(exe, "ptx", &ptx) == KFUSE_OK);
  CHECK(ptx && strstr(ptx, ".entry"));
  kfuse_free_string(ptx);
  char *fused = NULL;
  CHECK(kfuse_executable_dump(exe, "fused", &fused) == KFUSE_OK);
  CHECK(fused && strstr(fused, "kf.kernel") && strstr(fused, "#kf.launch"));
  kfuse_free_string(fused);
  char *nothing = NULL;
  CHECK(kfuse_executable_dump(exe, "sass", &nothing) == KFUSE_INVALID_ARGUMENT);
  CHECK(strstr(kfuse_last_error(), "'sass'") != NULL);
  char *explained = NULL;
  CHECK(kfuse_explain_fusion(g, 0, 1, &explained) == KFUSE_OK);
  CHECK(explained && strstr(explained, "\"producer\": \"%"));
  kfuse_free_string(explained);
  kfuse_executable_destroy(exe);
}

/* Bad input: a status and a message that names the problem. */
static void checkErrors(void) {
  kfuse_graph g = kfuse_graph_create("bad");
  int64_t a[2] = {4, 8}, b[2] = {3, 8};
  kfuse_tensor x = kfuse_input(g, "x", KFUSE_F32, 2, a, NULL);
  kfuse_tensor y = kfuse_input(g, "y", KFUSE_F32, 2, b, NULL);
  CHECK(kfuse_binary(g, "add", x, y) < 0);
  CHECK(strstr(kfuse_last_error(), "add") != NULL);
  CHECK(kfuse_graph_status(g) == KFUSE_INVALID_GRAPH);
  kfuse_executable exe = NULL;
  CHECK(kfuse_compile(g, NULL, &exe) != KFUSE_OK && exe == NULL);
  kfuse_graph_destroy(g);

  g = kfuse_graph_create("bad launch");
  x = kfuse_input(g, "x", KFUSE_F32, 2, a, NULL);
  CHECK(kfuse_output(g, "y", kfuse_unary(g, "exp", x)) == KFUSE_OK);
  kfuse_compile_options options = kfuse_default_compile_options();
  CHECK(options.launch == KFUSE_LAUNCH_AUTO);
  options.launch = 7;
  CHECK(kfuse_compile(g, &options, &exe) == KFUSE_INVALID_ARGUMENT &&
        exe == NULL);
  CHECK(strstr(kfuse_last_error(), "launch is 7") != NULL);
  options.launch = KFUSE_LAUNCH_AUTO;
  options.dynamic_dims = "L";
  CHECK(kfuse_compile(g, &options, &exe) == KFUSE_INVALID_ARGUMENT &&
        exe == NULL);
  CHECK(strstr(kfuse_last_error(), "'L'") != NULL);
  options.dynamic_dims = "L,";
  CHECK(kfuse_compile(g, &options, &exe) == KFUSE_INVALID_ARGUMENT);
  CHECK(strstr(kfuse_last_error(), "ends in a comma") != NULL);
  kfuse_graph_destroy(g);

  g = kfuse_graph_create("bad ids");
  x = kfuse_input(g, "x", KFUSE_F32, 2, a, NULL);
  CHECK(kfuse_unary(g, "exp", 12345) < 0);
  CHECK(strstr(kfuse_last_error(), "12345") != NULL);
  CHECK(kfuse_unary(g, "expp", x) < 0);
  CHECK(strstr(kfuse_last_error(), "'expp'") != NULL);
  CHECK(kfuse_input(g, "z", (kfuse_dtype)42, 2, a, NULL) < 0);
  CHECK(kfuse_reshape(g, x, 9, a) < 0);
  float data[32] = {0};
  kfuse_host_tensor wrong = {data, KFUSE_F32, 2, b};
  kfuse_host_tensor out;
  CHECK(kfuse_output(g, "x", x) == KFUSE_OK);
  CHECK(kfuse_evaluate(g, &wrong, 1, &out, 1) != KFUSE_OK);
  CHECK(strlen(kfuse_last_error()) > 0);
  kfuse_graph_destroy(g);

  kfuse_graph parsed = NULL;
  CHECK(kfuse_graph_from_mlir("func.func @f(", &parsed) != KFUSE_OK);
  CHECK(parsed == NULL && strlen(kfuse_last_error()) > 0);
}

/* The indexing ops: y = concat(x[:, 1:3], gather(x, ids, axis 1)) of f32
 * [2, 4] with i64 ids {3, -1, 9}: the last is out of range, so NaN. And a
 * slice out of range is refused with its shapes. */
static void checkIndexing(void) {
  kfuse_graph g = kfuse_graph_create("indexing");
  int64_t xs[2] = {2, 4}, is[1] = {3};
  kfuse_tensor x = kfuse_input(g, "x", KFUSE_F32, 2, xs, NULL);
  kfuse_tensor ids = kfuse_input(g, "ids", KFUSE_I64, 1, is, NULL);
  kfuse_tensor parts[2] = {kfuse_slice(g, x, 1, 1, 1, 3, 1),
                           kfuse_gather(g, x, ids, 1)};
  kfuse_tensor y = kfuse_concat(g, 2, parts, 1);
  CHECK(y >= 0 && kfuse_output(g, "y", y) == KFUSE_OK);
  float data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t idData[3] = {3, -1, 9};
  kfuse_host_tensor in[2] = {{data, KFUSE_F32, 2, xs},
                             {idData, KFUSE_I64, 1, is}};
  kfuse_host_tensor out;
  CHECK(kfuse_evaluate(g, in, 2, &out, 1) == KFUSE_OK);
  CHECK(out.rank == 2 && out.sizes[0] == 2 && out.sizes[1] == 5);
  const float *v = (const float *)out.data;
  for (int r = 0; r < 2; ++r) {
    CHECK(v[r * 5] == data[r * 4 + 1] && v[r * 5 + 1] == data[r * 4 + 2]);
    CHECK(v[r * 5 + 2] == data[r * 4 + 3] && v[r * 5 + 3] == data[r * 4 + 3]);
    CHECK(isnan(v[r * 5 + 4]));
  }
  kfuse_host_tensor_free(&out);
  CHECK(kfuse_slice(g, x, 1, 2, 1, 9, 1) < 0);
  CHECK(strstr(kfuse_last_error(), "slice [2:9] of dim 1 of 2x4") != NULL);
  kfuse_graph_destroy(g);
}

/* argmax along rows of f32 [2, 3] with a tie (the first wins) and
 * cumsum down its columns; a name that is no arg-reduction is refused. */
static void checkAxisOps(void) {
  kfuse_graph g = kfuse_graph_create("axis_ops");
  int64_t xs[2] = {2, 3};
  kfuse_tensor x = kfuse_input(g, "x", KFUSE_F32, 2, xs, NULL);
  kfuse_tensor pick = kfuse_arg_reduce(g, "argmax", x, -1, 0);
  kfuse_tensor sums = kfuse_cumsum(g, x, 0);
  CHECK(pick >= 0 && kfuse_output(g, "pick", pick) == KFUSE_OK);
  CHECK(sums >= 0 && kfuse_output(g, "sums", sums) == KFUSE_OK);
  float data[6] = {1, 5, 5, -2, -3, 0};
  kfuse_host_tensor in[1] = {{data, KFUSE_F32, 2, xs}};
  kfuse_host_tensor out[2];
  CHECK(kfuse_evaluate(g, in, 1, out, 2) == KFUSE_OK);
  CHECK(out[0].dtype == KFUSE_I64 && out[0].rank == 1 && out[0].sizes[0] == 2);
  const int64_t *p = (const int64_t *)out[0].data;
  CHECK(p[0] == 1 && p[1] == 2);
  const float *c = (const float *)out[1].data;
  CHECK(c[0] == 1 && c[1] == 5 && c[2] == 5);
  CHECK(c[3] == -1 && c[4] == 2 && c[5] == 5);
  kfuse_host_tensor_free(&out[0]);
  kfuse_host_tensor_free(&out[1]);
  CHECK(kfuse_arg_reduce(g, "argsum", x, 0, 0) < 0);
  CHECK(strstr(kfuse_last_error(), "argsum") != NULL);
  kfuse_graph_destroy(g);
}

static void checkGrad(void) {
  kfuse_graph g = kfuse_graph_create("loss");
  int64_t xs[1] = {3};
  kfuse_tensor x = kfuse_input(g, "x", KFUSE_F32, 1, xs, NULL);
  kfuse_tensor sq = kfuse_binary(g, "mul", x, x);
  CHECK(kfuse_output(g, "loss", kfuse_reduce(g, "sum", sq, 0, NULL, 0)) ==
        KFUSE_OK);
  CHECK(kfuse_output(g, "sq", sq) == KFUSE_OK);
  kfuse_graph joint = NULL;
  const char *wrt[1] = {"x"};
  CHECK(kfuse_graph_grad(g, "loss", wrt, 1, &joint) == KFUSE_OK);
  CHECK(kfuse_graph_num_values(joint, 1) == 3);
  float data[3] = {1, -2, 0.5f};
  kfuse_host_tensor in[1] = {{data, KFUSE_F32, 1, xs}};
  kfuse_host_tensor out[3];
  CHECK(kfuse_evaluate(joint, in, 1, out, 3) == KFUSE_OK);
  const float *d = (const float *)out[2].data;
  CHECK(d[0] == 2 && d[1] == -4 && d[2] == 1); /* d sum(x^2) / dx = 2x */
  for (int i = 0; i < 3; ++i)
    kfuse_host_tensor_free(&out[i]);
  kfuse_graph_destroy(joint);
  /* A loss of rank 1 is refused, naming it; vjp takes it with a cotangent. */
  CHECK(kfuse_graph_grad(g, "sq", NULL, 0, &joint) == KFUSE_INVALID_ARGUMENT);
  CHECK(strstr(kfuse_last_error(), "'sq'") != NULL);
  const char *ys[1] = {"sq"};
  CHECK(kfuse_graph_vjp(g, ys, 1, NULL, 0, &joint) == KFUSE_OK);
  CHECK(kfuse_graph_num_values(joint, 0) == 2); /* x, grad_sq */
  kfuse_graph_destroy(joint);
  kfuse_graph_destroy(g);
}

int main(void) {
  CHECK(kfuse_c_api_version() == KFUSE_C_API_VERSION);
  CHECK(strlen(kfuse_version()) > 0);
  kfuse_graph g = buildGraph();
  checkGraph(g);
  checkEvaluate(g);
  checkCompile(g);
  kfuse_graph_destroy(g);
  checkIndexing();
  checkAxisOps();
  checkGrad();
  checkErrors();
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    printf("capi-test: all checks passed\n");
  return failures ? 1 : 0;
}
