/*
 * mars-lab native kernels (issue 16): the optimiser's fused passes, in place on the TensorFlow.js wasm heap.
 *
 * engine/rl/adam.ts stays the reference; engine/rl/nativeAdam.ts calls these only when the native matrix products are
 * active on the wasm backend. Like gemm (mars_gemm.c), each call receives the heap's current ArrayBuffer and byte
 * offsets into it, and checks every access against the buffer's length.
 *
 * sumSquares(heap, table): Σ x² over several float32 arrays, accumulated in double; table is a Float64Array of
 *   (offset, count) pairs. The global gradient norm is its square root.
 * adam(heap, table, scaled, scale, beta1, oneMinusBeta1, beta2, oneMinusBeta2, bc1, bc2, eps, lr): one AdamW update of
 *   every slot; table is a Float64Array of (param, grad, m, v, count, decayFactor) sextuples. Per element, in float32
 *   and in the order of adam.ts's tensor ops (so that an unclipped update is the same to the bit):
 *     g = scaled ? grad·scale : grad
 *     m ← m·β1 + g·(1−β1);  v ← v·β2 + g²·(1−β2)
 *     p ← p·decayFactor − ((m / bc1) / (sqrt(v / bc2) + eps))·lr
 *   decayFactor is float32(1 − lr·wd), or 1 where weight decay does not apply (p·1 is p exactly).
 * Every scalar arrives as a double computed in JavaScript exactly as adam.ts computes it, and is rounded to float32
 * here as tfjs rounds a scalar operand. The build uses -std=c11, which keeps the compiler from contracting a·b+c
 * into a fused multiply-add (that would round differently from the wasm backend's separate ops).
 */
#include "mars_native.h"
#include <math.h>
#include <stdint.h>

static int table_of(napi_env env, napi_value v, int width, const double **out, size_t *rows) {
  bool isTa = false;
  napi_typedarray_type tt;
  size_t len = 0;
  void *data = NULL;
  napi_is_typedarray(env, v, &isTa);
  if (!isTa || napi_get_typedarray_info(env, v, &tt, &len, &data, NULL, NULL) != napi_ok || tt != napi_float64_array ||
      len % (size_t)width != 0)
    return 0;
  *out = data;
  *rows = len / (size_t)width;
  return 1;
}

static int heap_of(napi_env env, napi_value v, char **heap, size_t *len) {
  bool isAb = false;
  void *data = NULL;
  napi_is_arraybuffer(env, v, &isAb);
  if (!isAb || napi_get_arraybuffer_info(env, v, &data, len) != napi_ok) return 0;
  *heap = data;
  return 1;
}

napi_value mars_js_sum_squares(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  char *heap = NULL;
  size_t heapLen = 0, rows = 0;
  const double *t = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2 || !heap_of(env, argv[0], &heap, &heapLen))
    return mars_throw(env, "sumSquares: expected (the wasm heap's ArrayBuffer, a Float64Array of (offset, count) pairs)");
  if (!table_of(env, argv[1], 2, &t, &rows)) return mars_throw(env, "sumSquares: the table must be a Float64Array of (offset, count) pairs");
  for (size_t r = 0; r < rows; r++)
    if (t[2 * r + 1] < 0 || t[2 * r + 1] != floor(t[2 * r + 1]) || !mars_in_heap(t[2 * r], t[2 * r + 1], heapLen))
      return mars_throw(env, "sumSquares: an array lies outside the heap");
  double total = 0;
  for (size_t r = 0; r < rows; r++) {
    const float *x = (const float *)(heap + (size_t)t[2 * r]);
    size_t n = (size_t)t[2 * r + 1];
    /* Four partial sums: independent chains the compiler can keep in registers. */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += (double)x[i] * x[i];
      s1 += (double)x[i + 1] * x[i + 1];
      s2 += (double)x[i + 2] * x[i + 2];
      s3 += (double)x[i + 3] * x[i + 3];
    }
    for (; i < n; i++) s0 += (double)x[i] * x[i];
    total += (s0 + s1) + (s2 + s3);
  }
  napi_value out;
  napi_create_double(env, total, &out);
  return out;
}

static void adam_slot(float *p, const float *g, float *m, float *v, size_t n, int scaled, float scale, float b1, float omb1,
                      float b2, float omb2, float bc1, float bc2, float eps, float lr, float decay) {
  for (size_t i = 0; i < n; i++) {
    float gi = scaled ? g[i] * scale : g[i];
    float mi = m[i] * b1 + gi * omb1;
    float vi = v[i] * b2 + (gi * gi) * omb2;
    m[i] = mi;
    v[i] = vi;
    float update = (mi / bc1) / (sqrtf(vi / bc2) + eps);
    p[i] = p[i] * decay - update * lr;
  }
}

napi_value mars_js_adam(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  char *heap = NULL;
  size_t heapLen = 0, rows = 0;
  const double *t = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 12 || !heap_of(env, argv[0], &heap, &heapLen))
    return mars_throw(env, "adam: expected 12 arguments, the first the wasm heap's ArrayBuffer");
  if (!table_of(env, argv[1], 6, &t, &rows))
    return mars_throw(env, "adam: the table must be a Float64Array of (param, grad, m, v, count, decayFactor) sextuples");
  bool scaled = false;
  double s[10];
  if (napi_get_value_bool(env, argv[2], &scaled) != napi_ok) return mars_throw(env, "adam: 'scaled' must be a boolean");
  for (int i = 0; i < 9; i++)
    if (napi_get_value_double(env, argv[3 + i], &s[i]) != napi_ok) return mars_throw(env, "adam: a scalar argument is not a number");
  for (size_t r = 0; r < rows; r++) {
    const double *row = t + 6 * r;
    double n = row[4];
    if (n < 0 || n != floor(n)) return mars_throw(env, "adam: a count is not a whole number");
    for (int k = 0; k < 4; k++)
      if (!mars_in_heap(row[k], n, heapLen)) return mars_throw(env, "adam: an array lies outside the heap");
  }
  float scale = (float)s[0], b1 = (float)s[1], omb1 = (float)s[2], b2 = (float)s[3], omb2 = (float)s[4];
  float bc1 = (float)s[5], bc2 = (float)s[6], eps = (float)s[7], lr = (float)s[8];
  for (size_t r = 0; r < rows; r++) {
    const double *row = t + 6 * r;
    adam_slot((float *)(heap + (size_t)row[0]), (const float *)(heap + (size_t)row[1]), (float *)(heap + (size_t)row[2]),
              (float *)(heap + (size_t)row[3]), (size_t)row[4], scaled, scale, b1, omb1, b2, omb2, bc1, bc2, eps, lr,
              (float)row[5]);
  }
  return NULL;
}
