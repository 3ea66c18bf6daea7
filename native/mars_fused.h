/*
 * mars-lab native kernels (issue 16): what the fused ops' sources (mars_fused.c, mars_logsoftmax.c) share: reading
 * a call's arguments (the heap's ArrayBuffer and numbers), the bounds macros, float32 exponentials four or eight at a
 * time, and vectorisable sums.
 */
#ifndef MARS_FUSED_H
#define MARS_FUSED_H
#include "mars_native.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARS_UNUSED __attribute__((unused))

#define MAX_ARGS 12

/* Reads (heap, n numbers); returns 0 (with a JS error thrown) when they are not that. */
static MARS_UNUSED int fused_args(napi_env env, napi_callback_info info, const char *name, size_t want, char **heap, size_t *len,
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
static MARS_UNUSED int sizes_ok(const double *s, int n) {
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
__attribute__((target("avx2"))) static MARS_UNUSED size_t exp_map_avx2(const float *x, float *y, size_t n, float a, float b) {
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

static MARS_UNUSED int has_avx2(void) {
  static int known = -1;
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  return known;
}
#endif

static MARS_UNUSED void mars_exp_map(const float *x, float *y, size_t n, float a, float b) {
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

#endif
