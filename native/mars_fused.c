/*
 * mars-lab native kernels (issue 16): the transformer's small fused ops, forward and backward, in place on the
 * TensorFlow.js wasm heap. The tiny model's step is bound by kernel launches (~1,000 per step, most of them element-wise
 * ops on [rows, D] tensors); each function here does in one pass what the stock path does in 3–20 wasm kernels.
 *
 * engine/native/fused.ts registers them as wasm kernels (with their gradients) and engine/model/llama.ts and
 * engine/model/logProbs.ts use them only while the native matrix products are active (MARS_LAB_NATIVE_FUSED=0 turns
 * only these off). Like gemm (mars_gemm.c), every call receives the heap's current ArrayBuffer and byte offsets into
 * it, and checks every access against the buffer's length before touching anything. Float32 throughout, in the stock
 * ops' order where that is cheap (sums of squares and of exponentials are accumulated in double: the stock kernels
 * accumulate in float, so results agree to float rounding, not to the bit). -std=c11 keeps a·b+c unfused.
 *
 *   rmsNorm(heap, x, w, y, rows, d, eps)                 y = x / √(mean(x²) + eps) · w          x, y [rows, d]; w [d]
 *   rmsNormGrad(heap, x, w, dy, dx, dw, rows, d, eps)    dx [rows, d], dw [d] (summed over rows)
 *   swiglu(heap, g, u, y, n)                             y = g·σ(g)·u
 *   swigluGrad(heap, g, u, dy, dg, du, n)
 *   rope(heap, x, cos, sin, y, outer, heads, t, hd, scale, transpose)
 *        x, y [outer, heads, t, hd]; cos, sin [outer, 1, t, hd] (HF's rotate-half layout):
 *        y = (x·cos + rotate_half(x)·sin)·scale; transpose = 1 applies the adjoint (the gradient: dy → dx)
 *   logSoftmaxPick(heap, z, targets, logp, ent, rows, v, temperature)
 *        s = z / temperature; logp[r] = s[t] − logΣexp(s) (0 where t is outside [0, v)); ent[r] = −Σ p·log p
 *        (ent < 0: not computed)
 *   logSoftmaxPickGrad(heap, z, targets, dlogp, dent, dz, rows, v, temperature)   dent < 0: no entropy gradient
 *   gatherRows(heap, x, idx, y, n, m, width)             y[i] = x[idx[i]]     x [n, width], idx int32 [m]
 *   scatterAddRows(heap, v, idx, y, n, m, width)         y = 0; y[idx[i]] += v[i]   (gather's adjoint)
 */
#include "mars_native.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 12

/* Reads (heap, n numbers); returns 0 (with a JS error thrown) when they are not that. */
static int fused_args(napi_env env, napi_callback_info info, const char *name, size_t want, char **heap, size_t *len,
                      double *out) {
  size_t argc = MAX_ARGS + 1;
  napi_value argv[MAX_ARGS + 1];
  char msg[160];
  bool isAb = false;
  void *data = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != want + 1) {
    snprintf(msg, sizeof msg, "%s: expected the wasm heap's ArrayBuffer and %zu numbers", name, want);
    mars_throw(env, msg);
    return 0;
  }
  napi_is_arraybuffer(env, argv[0], &isAb);
  if (!isAb || napi_get_arraybuffer_info(env, argv[0], &data, len) != napi_ok) {
    snprintf(msg, sizeof msg, "%s: the first argument must be the wasm heap's ArrayBuffer", name);
    mars_throw(env, msg);
    return 0;
  }
  *heap = data;
  for (size_t i = 0; i < want; i++) {
    if (napi_get_value_double(env, argv[i + 1], &out[i]) != napi_ok || !isfinite(out[i])) {
      snprintf(msg, sizeof msg, "%s: argument %zu is not a finite number", name, i + 1);
      mars_throw(env, msg);
      return 0;
    }
  }
  return 1;
}

/* Whole, non-negative sizes. */
static int sizes_ok(const double *s, int n) {
  for (int i = 0; i < n; i++)
    if (s[i] < 0 || s[i] != floor(s[i]) || s[i] > 2147483647.0) return 0;
  return 1;
}

/*
 * y[i] = exp(a·x[i] + b) in float32, four at a time with SSE2 on x86-64 (a call to expf cannot be vectorised without
 * -ffast-math, which the optimiser's bit-exact passes must not get): Cephes' expf — e^t = 2^n·e^r with |r| ≤ ln2/2,
 * a degree-6 polynomial for e^r, 2^n built in the exponent bits. Within 2 ulp of expf over [−87, 88], where t is
 * clamped (below −87 it gives e^−87 ≈ 1.6e−38, not a smaller number: no sum of exponentials that holds the row's
 * maximum, e^0 = 1, changes). Elsewhere, and for the tail, expf.
 */
#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define MARS_SSE2 1

/* The same eight at a time where the CPU has AVX2 (checked once at run time); returns how many it did. The same
 * operations in the same order as the SSE2 loop, so both give the same bits. */
__attribute__((target("avx2"))) static size_t exp_map_avx2(const float *x, float *y, size_t n, float a, float b) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 c1 = _mm256_set1_ps(0.693359375f), c2 = _mm256_set1_ps(-2.12194440e-4f);
  const __m256 p0 = _mm256_set1_ps(1.9875691500e-4f), p1 = _mm256_set1_ps(1.3981999507e-3f);
  const __m256 p2 = _mm256_set1_ps(8.3334519073e-3f), p3 = _mm256_set1_ps(4.1665795894e-2f);
  const __m256 p4 = _mm256_set1_ps(1.6666665459e-1f), p5 = _mm256_set1_ps(5.0000001201e-1f);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), vb);
    t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
    __m256 fx = _mm256_add_ps(_mm256_mul_ps(t, log2e), half);
    __m256 fl = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(fx));
    fl = _mm256_sub_ps(fl, _mm256_and_ps(_mm256_cmp_ps(fl, fx, _CMP_GT_OQ), one));
    __m256 r = _mm256_sub_ps(_mm256_sub_ps(t, _mm256_mul_ps(fl, c1)), _mm256_mul_ps(fl, c2));
    __m256 p = p0;
    p = _mm256_add_ps(_mm256_mul_ps(p, r), p1);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), p2);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), p3);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), p4);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), p5);
    p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), one);
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fl), _mm256_set1_epi32(127)), 23);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
  }
  return i;
}

static int has_avx2(void) {
  static int known = -1;
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  return known;
}
#endif

static void mars_exp_map(const float *x, float *y, size_t n, float a, float b) {
  size_t i = 0;
#ifdef MARS_SSE2
  if (has_avx2()) i = exp_map_avx2(x, y, n, a, b);
  const __m128 va = _mm_set1_ps(a), vb = _mm_set1_ps(b), lo = _mm_set1_ps(-87.0f), hi = _mm_set1_ps(88.0f);
  const __m128 log2e = _mm_set1_ps(1.44269504088896341f), half = _mm_set1_ps(0.5f), one = _mm_set1_ps(1.0f);
  const __m128 c1 = _mm_set1_ps(0.693359375f), c2 = _mm_set1_ps(-2.12194440e-4f);
  const __m128 p0 = _mm_set1_ps(1.9875691500e-4f), p1 = _mm_set1_ps(1.3981999507e-3f), p2 = _mm_set1_ps(8.3334519073e-3f);
  const __m128 p3 = _mm_set1_ps(4.1665795894e-2f), p4 = _mm_set1_ps(1.6666665459e-1f), p5 = _mm_set1_ps(5.0000001201e-1f);
  for (; i + 4 <= n; i += 4) {
    __m128 t = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(x + i), va), vb);
    t = _mm_min_ps(_mm_max_ps(t, lo), hi);
    __m128 fx = _mm_add_ps(_mm_mul_ps(t, log2e), half);
    __m128 fl = _mm_cvtepi32_ps(_mm_cvttps_epi32(fx));
    fl = _mm_sub_ps(fl, _mm_and_ps(_mm_cmpgt_ps(fl, fx), one)); /* floor */
    __m128 r = _mm_sub_ps(_mm_sub_ps(t, _mm_mul_ps(fl, c1)), _mm_mul_ps(fl, c2));
    __m128 p = p0;
    p = _mm_add_ps(_mm_mul_ps(p, r), p1);
    p = _mm_add_ps(_mm_mul_ps(p, r), p2);
    p = _mm_add_ps(_mm_mul_ps(p, r), p3);
    p = _mm_add_ps(_mm_mul_ps(p, r), p4);
    p = _mm_add_ps(_mm_mul_ps(p, r), p5);
    p = _mm_add_ps(_mm_add_ps(_mm_mul_ps(p, _mm_mul_ps(r, r)), r), one);
    __m128i e = _mm_slli_epi32(_mm_add_epi32(_mm_cvttps_epi32(fl), _mm_set1_epi32(127)), 23);
    _mm_storeu_ps(y + i, _mm_mul_ps(p, _mm_castsi128_ps(e)));
  }
#endif
  for (; i < n; i++) y[i] = expf(a * x[i] + b);
}

/* Σ x over n floats as 8 independent partial sums (a vectorisable reduction), added up in double. */
static inline double mars_sum(const float *x, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) acc[k] += x[i + k];
  double total = 0;
  for (int k = 0; k < 8; k++) total += acc[k];
  for (; i < n; i++) total += x[i];
  return total;
}

/* Σ x·y likewise. */
static inline double mars_dot(const float *x, const float *y, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) acc[k] += x[i + k] * y[i + k];
  double total = 0;
  for (int k = 0; k < 8; k++) total += acc[k];
  for (; i < n; i++) total += (double)x[i] * y[i];
  return total;
}

#define AT(T, off) ((T *)(heap + (size_t)(off)))
#define CHECK(cond, what) \
  if (!(cond)) return mars_throw(env, what)

/* ---------------------------------------------------------------- RMSNorm ----------------------------------------- */

napi_value mars_js_rms_norm(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[6];
  if (!fused_args(env, info, "rmsNorm", 6, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 3, 2), "rmsNorm: rows and d must be whole numbers");
  size_t rows = (size_t)a[3], d = (size_t)a[4];
  CHECK(mars_in_heap(a[0], a[3] * a[4], len) && mars_in_heap(a[1], a[4], len) && mars_in_heap(a[2], a[3] * a[4], len),
        "rmsNorm: an operand lies outside the heap");
  const float *x = AT(const float, a[0]), *w = AT(const float, a[1]);
  float *y = AT(float, a[2]);
  float eps = (float)a[5];
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    double ss = 0;
    for (size_t j = 0; j < d; j++) ss += (double)xr[j] * xr[j];
    float inv = 1.0f / sqrtf((float)(ss / (double)d) + eps);
    for (size_t j = 0; j < d; j++) yr[j] = (xr[j] * inv) * w[j];
  }
  return NULL;
}

napi_value mars_js_rms_norm_grad(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[8];
  if (!fused_args(env, info, "rmsNormGrad", 8, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 5, 2), "rmsNormGrad: rows and d must be whole numbers");
  size_t rows = (size_t)a[5], d = (size_t)a[6];
  double n = a[5] * a[6];
  CHECK(mars_in_heap(a[0], n, len) && mars_in_heap(a[1], a[6], len) && mars_in_heap(a[2], n, len) &&
            mars_in_heap(a[3], n, len) && mars_in_heap(a[4], a[6], len),
        "rmsNormGrad: an operand lies outside the heap");
  const float *x = AT(const float, a[0]), *w = AT(const float, a[1]), *dy = AT(const float, a[2]);
  float *dx = AT(float, a[3]), *dw = AT(float, a[4]);
  float eps = (float)a[7];
  memset(dw, 0, d * sizeof(float));
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * d, *gr = dy + r * d;
    float *dxr = dx + r * d;
    double ss = 0, dot = 0;
    for (size_t j = 0; j < d; j++) {
      ss += (double)xr[j] * xr[j];
      dot += (double)gr[j] * w[j] * xr[j];
    }
    double ms = ss / (double)d + eps;
    double inv = 1.0 / sqrt(ms);
    /* d/dx_j of x_j·inv·w_j summed against dy: inv·dy_j·w_j − x_j·inv³·(Σ dy·w·x)/d */
    double k = inv * inv * inv * dot / (double)d;
    for (size_t j = 0; j < d; j++) {
      dxr[j] = (float)(inv * gr[j] * w[j] - xr[j] * k);
      dw[j] += (float)(gr[j] * xr[j] * inv);
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- SwiGLU ------------------------------------------ */

napi_value mars_js_swiglu(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[4];
  if (!fused_args(env, info, "swiglu", 4, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 3, 1), "swiglu: n must be a whole number");
  CHECK(mars_in_heap(a[0], a[3], len) && mars_in_heap(a[1], a[3], len) && mars_in_heap(a[2], a[3], len),
        "swiglu: an operand lies outside the heap");
  const float *g = AT(const float, a[0]), *u = AT(const float, a[1]);
  float *y = AT(float, a[2]);
  size_t n = (size_t)a[3];
  float e[256];
  for (size_t i0 = 0; i0 < n; i0 += 256) {
    size_t m = n - i0 < 256 ? n - i0 : 256;
    mars_exp_map(g + i0, e, m, -1.0f, 0.0f); /* e^−g */
    for (size_t k = 0; k < m; k++) {
      float s = 1.0f / (1.0f + e[k]);
      y[i0 + k] = (g[i0 + k] * s) * u[i0 + k];
    }
  }
  return NULL;
}

napi_value mars_js_swiglu_grad(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[6];
  if (!fused_args(env, info, "swigluGrad", 6, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 5, 1), "swigluGrad: n must be a whole number");
  for (int k = 0; k < 5; k++) CHECK(mars_in_heap(a[k], a[5], len), "swigluGrad: an operand lies outside the heap");
  const float *g = AT(const float, a[0]), *u = AT(const float, a[1]), *dy = AT(const float, a[2]);
  float *dg = AT(float, a[3]), *du = AT(float, a[4]);
  size_t n = (size_t)a[5];
  float e[256];
  for (size_t i0 = 0; i0 < n; i0 += 256) {
    size_t m = n - i0 < 256 ? n - i0 : 256;
    mars_exp_map(g + i0, e, m, -1.0f, 0.0f); /* e^−g */
    for (size_t k = 0; k < m; k++) {
      size_t i = i0 + k;
      float s = 1.0f / (1.0f + e[k]);
      float silu = g[i] * s;
      du[i] = dy[i] * silu;
      /* d silu / dg = s + g·s·(1 − s) */
      dg[i] = dy[i] * u[i] * (s + silu * (1.0f - s));
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- RoPE -------------------------------------------- */

napi_value mars_js_rope(napi_env env, napi_callback_info info) {
  char *heap;
  size_t len;
  double a[10];
  if (!fused_args(env, info, "rope", 10, &heap, &len, a)) return NULL;
  CHECK(sizes_ok(a + 4, 4), "rope: sizes must be whole numbers");
  size_t outer = (size_t)a[4], heads = (size_t)a[5], t = (size_t)a[6], hd = (size_t)a[7];
  CHECK(hd % 2 == 0, "rope: the head size must be even");
  double nx = a[4] * a[5] * a[6] * a[7], nc = a[4] * a[6] * a[7];
  CHECK(mars_in_heap(a[0], nx, len) && mars_in_heap(a[1], nc, len) && mars_in_heap(a[2], nc, len) &&
            mars_in_heap(a[3], nx, len),
        "rope: an operand lies outside the heap");
  const float *x = AT(const float, a[0]), *cs = AT(const float, a[1]), *sn = AT(const float, a[2]);
  float *y = AT(float, a[3]);
  float scale = (float)a[8];
  int adjoint = a[9] != 0;
  size_t half = hd / 2;
  for (size_t o = 0; o < outer; o++) {
    for (size_t h = 0; h < heads; h++) {
      for (size_t p = 0; p < t; p++) {
        const float *xr = x + ((o * heads + h) * t + p) * hd;
        const float *c = cs + (o * t + p) * hd, *s = sn + (o * t + p) * hd;
        float *yr = y + ((o * heads + h) * t + p) * hd;
        if (!adjoint) {
          /* rotate_half(x) = (−x[half:], x[:half]) */
          for (size_t j = 0; j < half; j++) yr[j] = (xr[j] * c[j] + (-xr[j + half]) * s[j]) * scale;
          for (size_t j = half; j < hd; j++) yr[j] = (xr[j] * c[j] + xr[j - half] * s[j]) * scale;
        } else {
          /* The adjoint: dx = (dy·cos + rotate_halfᵀ(dy·sin))·scale, rotate_halfᵀ(u) = (u[half:], −u[:half]) */
          for (size_t j = 0; j < half; j++) yr[j] = (xr[j] * c[j] + xr[j + half] * s[j + half]) * scale;
          for (size_t j = half; j < hd; j++) yr[j] = (xr[j] * c[j] - xr[j - half] * s[j - half]) * scale;
        }
      }
    }
  }
  return NULL;
}

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

/* ---------------------------------------------------------------- row gather and scatter -------------------------- */

static int rows_args(napi_env env, napi_callback_info info, const char *name, char **heap, double *a, const int32_t **idx) {
  size_t len;
  char msg[120];
  if (!fused_args(env, info, name, 6, heap, &len, a)) return 0;
  if (!sizes_ok(a + 3, 3)) {
    snprintf(msg, sizeof msg, "%s: sizes must be whole numbers", name);
    mars_throw(env, msg);
    return 0;
  }
  double n = a[3], m = a[4], w = a[5];
  int gather = name[0] == 'g';
  /* gather: x [n, w] → y [m, w]; scatter: v [m, w] → y [n, w] */
  if (!mars_in_heap(a[0], (gather ? n : m) * w, len) || !mars_in_heap(a[1], m, len) ||
      !mars_in_heap(a[2], (gather ? m : n) * w, len)) {
    snprintf(msg, sizeof msg, "%s: an operand lies outside the heap", name);
    mars_throw(env, msg);
    return 0;
  }
  *idx = (const int32_t *)(*heap + (size_t)a[1]);
  for (size_t i = 0; i < (size_t)m; i++) {
    if ((*idx)[i] < 0 || (double)(*idx)[i] >= n) {
      snprintf(msg, sizeof msg, "%s: index %d at %zu is outside [0, %.0f)", name, (*idx)[i], i, n);
      mars_throw(env, msg);
      return 0;
    }
  }
  return 1;
}

napi_value mars_js_gather_rows(napi_env env, napi_callback_info info) {
  char *heap;
  double a[6];
  const int32_t *idx;
  if (!rows_args(env, info, "gatherRows", &heap, a, &idx)) return NULL;
  size_t m = (size_t)a[4], w = (size_t)a[5];
  const float *x = AT(const float, a[0]);
  float *y = AT(float, a[2]);
  for (size_t i = 0; i < m; i++) memcpy(y + i * w, x + (size_t)idx[i] * w, w * sizeof(float));
  return NULL;
}

napi_value mars_js_scatter_add_rows(napi_env env, napi_callback_info info) {
  char *heap;
  double a[6];
  const int32_t *idx;
  if (!rows_args(env, info, "scatterAddRows", &heap, a, &idx)) return NULL;
  size_t n = (size_t)a[3], m = (size_t)a[4], w = (size_t)a[5];
  const float *v = AT(const float, a[0]);
  float *y = AT(float, a[2]);
  memset(y, 0, n * w * sizeof(float));
  for (size_t i = 0; i < m; i++) {
    float *dst = y + (size_t)idx[i] * w;
    const float *src = v + i * w;
    for (size_t j = 0; j < w; j++) dst[j] += src[j];
  }
  return NULL;
}
