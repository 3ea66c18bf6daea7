/*
 * mars-lab native kernels (issue 16): the transformer's small fused ops, forward and backward, in place on the
 * TensorFlow.js wasm heap. The tiny model's step is bound by kernel launches (~1,000 per step, most of them element-wise
 * ops on [rows, D] tensors); each function here does in one pass what the stock path does in 3–20 wasm kernels.
 *
 * engine/native/fused.ts registers them as wasm kernels (with their gradients) and engine/model/llama.ts and
 * engine/model/logProbs.ts use them only while the native matrix products are active (MARS_LAB_NATIVE_FUSED=0 turns
 * only these off). Like gemm (mars_gemm.c), every call receives the heap's current ArrayBuffer and byte offsets into
 * it, and checks every access against the buffer's length before touching anything. Float32 throughout, in the stock
 * ops' order where that is cheap (sums of squares accumulate in double, sums of exponentials in eight float partial
 * sums added in double; exponentials are Cephes' polynomial, mars_fused.h): results agree with the stock kernels to
 * float rounding, not to the bit. -std=c11 keeps a·b+c unfused.
 *
 *   rmsNorm(heap, x, w, y, rows, d, eps)                 y = x / √(mean(x²) + eps) · w          x, y [rows, d]; w [d]
 *   rmsNormGrad(heap, x, w, dy, dx, dw, rows, d, eps)    dx [rows, d], dw [d] (summed over rows)
 *   swiglu(heap, g, u, y, n)                             y = g·σ(g)·u
 *   swigluGrad(heap, g, u, dy, dg, du, n)
 *   rope(heap, x, cos, sin, y, outer, heads, t, hd, scale, adjoint)
 *        x, y [outer, heads, t, hd]; cos, sin [outer, 1, t, hd] (HF's rotate-half layout):
 *        y = (x·cos + rotate_half(x)·sin)·scale; adjoint = 1 applies the adjoint (the gradient: dy → dx)
 *   in mars_logsoftmax.c:
 *   logSoftmaxPick(heap, z, targets, logp, ent, rows, v, temperature)
 *        s = z / temperature; logp[r] = s[t] − logΣexp(s) (0 where t is outside [0, v)); ent[r] = −Σ p·log p
 *        (ent < 0: not computed)
 *   logSoftmaxPickGrad(heap, z, targets, dlogp, dent, dz, rows, v, temperature)   dent < 0: no entropy gradient
 *   gatherRows(heap, x, idx, y, n, m, width)             y[i] = x[idx[i]]     x [n, width], idx int32 [m]
 *   scatterAddRows(heap, v, idx, y, n, m, width)         y = 0; y[idx[i]] += v[i]   (gather's adjoint)
 */
#include "mars_fused.h"

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
