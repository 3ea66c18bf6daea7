/*
 * mars-lab native kernels (issue 16): log-softmax with the target picked, and the entropy, forward and backward, in
 * place on the TensorFlow.js wasm heap (the training forward's head: ~20 stock kernels over [rows, V] each way).
 * Registered in mars_gemm.c, used by engine/native/fused.ts; the arguments are described in mars_fused.c's header.
 */
#include "mars_fused.h"

/* ---------------------------------------------------------------- log-softmax with the target picked ------------- */

/*
 * One row: s = z / temperature into `s`, e = exp(s − max) into `e`; returns log Σ exp(s) = max + log Σ e. The
 * exponentials are float32 (mars_exp_map), their sum double.
 */
static double row_lse(const float *z, float *s, float *e, size_t v, float temperature) {
  float m = -INFINITY;
  if (temperature == 1.0f)
    memcpy(s, z, v * sizeof(float));
  else
    for (size_t j = 0; j < v; j++) s[j] = z[j] / temperature;
  for (size_t j = 0; j < v; j++) m = s[j] > m ? s[j] : m;
  /* A NaN or an infinity in the row makes the result NaN, as the stock ops' (the clamped exponential would hide it). */
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t j = 0;
  for (; j + 8 <= v; j += 8)
    for (int k = 0; k < 8; k++) acc[k] += s[j + k] - s[j + k];
  float bad = 0;
  for (int k = 0; k < 8; k++) bad += acc[k];
  for (; j < v; j++) bad += s[j] - s[j];
  if (bad != 0.0f || isnan(bad)) return NAN;
  mars_exp_map(s, e, v, 1.0f, -m);
  return (double)m + log(mars_sum(e, v));
}

/* The entropy of one row from s, e = exp(s − max) and lse: −Σ p·(s − lse) = lse − Σ e·s / Σ e. */
static double row_entropy(const float *s, const float *e, size_t v, double lse) {
  return lse - mars_dot(e, s, v) / mars_sum(e, v);
}

#define ROW_STACK 4096

/* Two scratch rows of v floats: on the stack when they fit, else from the heap (NULL when that fails). */
static float *scratch(float *stack, size_t v) { return 2 * v <= ROW_STACK ? stack : malloc(2 * v * sizeof(float)); }

napi_value mars_js_log_softmax_pick(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[7];
  if (!fused_args(env, info, "logSoftmaxPick", 7, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 4, 2), "logSoftmaxPick: rows and v must be whole numbers");
  size_t rows = (size_t)a[4], v = (size_t)a[5];
  float temperature = (float)a[6];
  CHECK(temperature > 0, "logSoftmaxPick: the temperature must be positive");
  int withEnt = a[3] >= 0;
  CHECK(mars_in_heap(a[0], a[4] * a[5], len) && mars_in_heap(a[1], a[4], len) && mars_in_heap(a[2], a[4], len) &&
            (!withEnt || mars_in_heap(a[3], a[4], len)),
        "logSoftmaxPick: an operand lies outside the heap");
  const float *z = AT(const float, a[0]);
  const int32_t *tg = AT(const int32_t, a[1]);
  float *logp = AT(float, a[2]), *ent = withEnt ? AT(float, a[3]) : NULL;
  float stack[ROW_STACK];
  float *s = scratch(stack, v);
  CHECK(s != NULL, "logSoftmaxPick: out of memory");
  float *e = s + v;
  for (size_t r = 0; r < rows; r++) {
    double lse = row_lse(z + r * v, s, e, v, temperature);
    int32_t t = tg[r];
    logp[r] = isnan(lse) ? NAN : (t >= 0 && (size_t)t < v) ? (float)((double)s[t] - lse) : 0.0f;
    if (ent) ent[r] = (float)row_entropy(s, e, v, lse);
  }
  if (s != stack) free(s);
  return NULL;
}

napi_value mars_js_log_softmax_pick_grad(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[8];
  if (!fused_args(env, info, "logSoftmaxPickGrad", 8, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 5, 2), "logSoftmaxPickGrad: rows and v must be whole numbers");
  size_t rows = (size_t)a[5], v = (size_t)a[6];
  float temperature = (float)a[7];
  CHECK(temperature > 0, "logSoftmaxPickGrad: the temperature must be positive");
  int withEnt = a[3] >= 0;
  CHECK(mars_in_heap(a[0], a[5] * a[6], len) && mars_in_heap(a[1], a[5], len) && mars_in_heap(a[2], a[5], len) &&
            (!withEnt || mars_in_heap(a[3], a[5], len)) && mars_in_heap(a[4], a[5] * a[6], len),
        "logSoftmaxPickGrad: an operand lies outside the heap");
  const float *z = AT(const float, a[0]), *dl = AT(const float, a[2]);
  const int32_t *tg = AT(const int32_t, a[1]);
  const float *de = withEnt ? AT(const float, a[3]) : NULL;
  float *dz = AT(float, a[4]);
  float stack[ROW_STACK];
  float *s = scratch(stack, v);
  CHECK(s != NULL, "logSoftmaxPickGrad: out of memory");
  float *e = s + v;
  for (size_t r = 0; r < rows; r++) {
    float *dzr = dz + r * v;
    double lse = row_lse(z + r * v, s, e, v, temperature);
    if (isnan(lse)) {
      for (size_t j = 0; j < v; j++) dzr[j] = NAN;
      continue;
    }
    int32_t t = tg[r];
    int valid = t >= 0 && (size_t)t < v;
    /* p_j = e_j / Σe. d logp / d s_j = [j = t] − p_j (0 for an invalid target); d H / d s_j = −p_j·(s_j − lse + H). */
    float g = valid ? dl[r] : 0.0f, ge = de ? de[r] : 0.0f;
    float invSum = (float)(1.0 / mars_sum(e, v)), invT = (float)(1.0 / (double)temperature);
    float shift = de ? (float)(row_entropy(s, e, v, lse) - lse) : 0.0f; /* H − lse */
    for (size_t j = 0; j < v; j++) {
      float p = e[j] * invSum;
      dzr[j] = (-g * p - ge * p * (s[j] + shift)) * invT;
    }
    if (valid) dzr[t] += g * invT;
  }
  if (s != stack) free(s);
  return NULL;
}

