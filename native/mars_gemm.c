/*
 * mars-lab native kernels (issue 16): single-precision matrix products for the TensorFlow.js wasm backend.
 *
 * A Node-API addon (the same binary loads in Node.js and in Electron's utilityProcess). It works in place on the wasm
 * heap: each call receives the heap's current ArrayBuffer (it is replaced whenever the heap grows, so it is never kept)
 * and byte offsets of the operands, checks every access against the buffer's length and writes the product where the
 * backend allocated the output. Nothing is copied.
 *
 * Two kernels, chosen when the addon is built (scripts/buildNative.mjs):
 *  - OpenBLAS `cblas_sgemm` (MARS_WITH_OPENBLAS, normally linked statically from Debian's libopenblas-dev); its thread
 *    count is set to 1 when the addon loads, setThreads raises it; products under 2^21 multiply-adds run on one;
 *  - the project's own blocked kernel (always compiled in): A and B packed into 6-row / 16-column strips, a 6×16
 *    AVX2+FMA micro-kernel when the CPU has both (checked at run time), a portable C micro-kernel otherwise. One thread.
 * An OpenBLAS build can be switched to the own kernel at run time (setKernel), which is how both are tested.
 * The optimiser's fused passes (sumSquares, adam) live in mars_adam.c, the transformer's fused ops (rmsNorm, swiglu,
 * rope, logSoftmaxPick, gatherRows, scatterAddRows and their gradients) in mars_fused.c; all are registered here.
 *
 * gemm(heap, aOff, bOff, cOff, m, n, k, transA, transB, batch, biasOff, biasLen, activation, alpha, preluOff, preluLen):
 *   C[b] = act(op(A[b]) · op(B[b]) + bias), row-major; op(A) is m×k, op(B) k×n, C m×n.
 *   batch: null, or an Int32Array of triples (count, aStride, bStride), outermost first: the output's batch dimensions
 *   and, for each, how many matrices A and B advance per step (0 where that operand is broadcast).
 *   biasOff < 0: no bias; biasLen is n (one per column) or 1. activation: 0 linear, 1 relu, 2 relu6, 3 sigmoid,
 *   4 leakyrelu (alpha), 5 elu, 6 prelu (weights at preluOff, preluLen n or 1, like the bias).
 */
#include "mars_native.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef MARS_WITH_OPENBLAS
#include <cblas.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#define MARS_X86 1
#include <immintrin.h>
#endif

#define MR 6
#define NR 16
#define KC 256
#define MC 120
#define NC 3072

enum { KERNEL_OPENBLAS = 0, KERNEL_OWN = 1 };

#ifdef MARS_WITH_OPENBLAS
static int g_kernel = KERNEL_OPENBLAS;
#else
static int g_kernel = KERNEL_OWN;
#endif
static int g_has_avx2 = 0;
#ifdef MARS_WITH_OPENBLAS
/* The OpenBLAS thread count setThreads asked for, and the product size (M*N*K) below which one thread runs it. */
static int g_threads = 1;
#define MARS_MT_MIN_MNK 2097152.0
#endif

/* ---------------------------------------------------------------- the own kernel ---------------------------------- */

/* op(A)(i, p) for row i < m, column p < k. */
static inline float a_at(const float *A, int lda, int transA, int i, int p) {
  return transA ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
}
static inline float b_at(const float *B, int ldb, int transB, int p, int j) {
  return transB ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
}

/* Rows [i0, i0+mc) × columns [p0, p0+kc) of op(A) into MR-row strips: strip s holds kc columns of MR values. */
static void pack_a(int mc, int kc, const float *A, int lda, int transA, int i0, int p0, float *dst) {
  for (int is = 0; is < mc; is += MR) {
    int rows = mc - is < MR ? mc - is : MR;
    for (int p = 0; p < kc; p++) {
      int i = 0;
      for (; i < rows; i++) dst[i] = a_at(A, lda, transA, i0 + is + i, p0 + p);
      for (; i < MR; i++) dst[i] = 0.0f;
      dst += MR;
    }
  }
}

/* Rows [p0, p0+kc) × columns [j0, j0+nc) of op(B) into NR-column strips. */
static void pack_b(int kc, int nc, const float *B, int ldb, int transB, int p0, int j0, float *dst) {
  for (int js = 0; js < nc; js += NR) {
    int cols = nc - js < NR ? nc - js : NR;
    if (!transB && cols == NR) {
      for (int p = 0; p < kc; p++) {
        memcpy(dst, B + (size_t)(p0 + p) * ldb + j0 + js, NR * sizeof(float));
        dst += NR;
      }
      continue;
    }
    for (int p = 0; p < kc; p++) {
      int j = 0;
      for (; j < cols; j++) dst[j] = b_at(B, ldb, transB, p0 + p, j0 + js + j);
      for (; j < NR; j++) dst[j] = 0.0f;
      dst += NR;
    }
  }
}

/* Writes (accumulate: adds) the mr×nr corner of a full MR×NR tile into C. */
static void store_tile(const float *tile, float *C, int ldc, int mr, int nr, int accumulate) {
  for (int i = 0; i < mr; i++) {
    float *c = C + (size_t)i * ldc;
    const float *t = tile + i * NR;
    if (accumulate)
      for (int j = 0; j < nr; j++) c[j] += t[j];
    else
      for (int j = 0; j < nr; j++) c[j] = t[j];
  }
}

static void ukernel_c(int kc, const float *a, const float *b, float *C, int ldc, int mr, int nr, int accumulate) {
  float acc[MR * NR];
  memset(acc, 0, sizeof acc);
  for (int p = 0; p < kc; p++) {
    for (int i = 0; i < MR; i++) {
      float ai = a[i];
      for (int j = 0; j < NR; j++) acc[i * NR + j] += ai * b[j];
    }
    a += MR;
    b += NR;
  }
  store_tile(acc, C, ldc, mr, nr, accumulate);
}

#ifdef MARS_X86
__attribute__((target("avx2,fma"))) static void ukernel_avx2(int kc, const float *a, const float *b, float *C, int ldc, int mr,
                                                             int nr, int accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int p = 0; p < kc; p++) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 x;
    x = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
    a += MR;
    b += NR;
  }
  __m256 rows[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (mr == MR && nr == NR) {
    for (int i = 0; i < MR; i++) {
      float *c = C + (size_t)i * ldc;
      if (accumulate) {
        _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(c), rows[i][0]));
        _mm256_storeu_ps(c + 8, _mm256_add_ps(_mm256_loadu_ps(c + 8), rows[i][1]));
      } else {
        _mm256_storeu_ps(c, rows[i][0]);
        _mm256_storeu_ps(c + 8, rows[i][1]);
      }
    }
    return;
  }
  float tile[MR * NR] __attribute__((aligned(32)));
  for (int i = 0; i < MR; i++) {
    _mm256_store_ps(tile + i * NR, rows[i][0]);
    _mm256_store_ps(tile + i * NR + 8, rows[i][1]);
  }
  store_tile(tile, C, ldc, mr, nr, accumulate);
}
#endif

/* Packing buffers, one pair per thread (worker_threads may each load the addon), grown on demand. */
static _Thread_local float *t_pack_a = NULL;
static _Thread_local float *t_pack_b = NULL;

static int ensure_buffers(void) {
  if (!t_pack_a) t_pack_a = aligned_alloc(64, sizeof(float) * MC * KC);
  if (!t_pack_b) t_pack_b = aligned_alloc(64, sizeof(float) * KC * (size_t)((NC + NR - 1) / NR * NR));
  return t_pack_a && t_pack_b;
}

/* C = op(A)·op(B), row-major, C's previous contents ignored. Returns 0 when the packing buffers could not be had. */
static int own_sgemm(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                     int ldc) {
  if (K == 0) {
    for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, sizeof(float) * N);
    return 1;
  }
  if (!ensure_buffers()) return 0;
  float *pa = t_pack_a, *pb = t_pack_b;
#ifdef MARS_X86
  void (*uk)(int, const float *, const float *, float *, int, int, int, int) = g_has_avx2 ? ukernel_avx2 : ukernel_c;
#else
  void (*uk)(int, const float *, const float *, float *, int, int, int, int) = ukernel_c;
#endif
  for (int jc = 0; jc < N; jc += NC) {
    int nc = N - jc < NC ? N - jc : NC;
    for (int pc = 0; pc < K; pc += KC) {
      int kc = K - pc < KC ? K - pc : KC;
      pack_b(kc, nc, B, ldb, transB, pc, jc, pb);
      for (int ic = 0; ic < M; ic += MC) {
        int mc = M - ic < MC ? M - ic : MC;
        pack_a(mc, kc, A, lda, transA, ic, pc, pa);
        for (int jr = 0; jr < nc; jr += NR) {
          int nr = nc - jr < NR ? nc - jr : NR;
          for (int ir = 0; ir < mc; ir += MR) {
            int mr = mc - ir < MR ? mc - ir : MR;
            uk(kc, pa + (size_t)ir * kc, pb + (size_t)jr * kc, C + (size_t)(ic + ir) * ldc + jc + jr, ldc, mr, nr, pc > 0);
          }
        }
      }
    }
  }
  return 1;
}

/* ---------------------------------------------------------------- one product, bias, activation ------------------ */

static int sgemm_one(int transA, int transB, int M, int N, int K, const float *A, const float *B, float *C) {
  int lda = transA ? M : K, ldb = transB ? K : N;
#ifdef MARS_WITH_OPENBLAS
  if (g_kernel == KERNEL_OPENBLAS) {
    if (K == 0) {
      memset(C, 0, sizeof(float) * (size_t)M * N);
      return 1;
    }
    /* Small products run on one thread (issue 28): OpenBLAS threads all but the smallest products, and at the sizes
       of a tiny model's sampling (16 x 128 x 344) a second thread made a KV-cache step 1.7x slower. */
    int one = g_threads > 1 && (double)M * N * K < MARS_MT_MIN_MNK;
    if (one) openblas_set_num_threads(1);
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
                lda, B, ldb, 0.0f, C, N);
    if (one) openblas_set_num_threads(g_threads);
    return 1;
  }
#endif
  return own_sgemm(transA, transB, M, N, K, A, lda, B, ldb, C, N);
}

static void epilogue(float *C, int M, int N, const float *bias, int biasLen, int act, float alpha, const float *prelu,
                     int preluLen) {
  size_t total = (size_t)M * N;
  if (bias) {
    for (int i = 0; i < M; i++) {
      float *c = C + (size_t)i * N;
      if (biasLen == 1)
        for (int j = 0; j < N; j++) c[j] += bias[0];
      else
        for (int j = 0; j < N; j++) c[j] += bias[j];
    }
  }
  switch (act) {
    case 1:
      for (size_t i = 0; i < total; i++) C[i] = C[i] < 0.0f ? 0.0f : C[i];
      break;
    case 2:
      for (size_t i = 0; i < total; i++) C[i] = C[i] < 0.0f ? 0.0f : (C[i] > 6.0f ? 6.0f : C[i]);
      break;
    case 3:
      for (size_t i = 0; i < total; i++) C[i] = 1.0f / (1.0f + expf(-C[i]));
      break;
    case 4:
      for (size_t i = 0; i < total; i++) C[i] = C[i] < 0.0f ? alpha * C[i] : C[i];
      break;
    case 5:
      for (size_t i = 0; i < total; i++) C[i] = C[i] < 0.0f ? expf(C[i]) - 1.0f : C[i];
      break;
    case 6:
      for (size_t i = 0; i < total; i++) {
        float w = prelu[preluLen == 1 ? 0 : i % (size_t)N];
        C[i] = C[i] < 0.0f ? w * C[i] : C[i];
      }
      break;
    default:
      break;
  }
}

/* ---------------------------------------------------------------- Node-API glue ---------------------------------- */

#define MAX_BATCH_DIMS 6

static int get_i32(napi_env env, napi_value v, int32_t *out) { return napi_get_value_int32(env, v, out) == napi_ok; }
static int get_f64(napi_env env, napi_value v, double *out) { return napi_get_value_double(env, v, out) == napi_ok; }

static napi_value js_gemm(napi_env env, napi_callback_info info) {
  size_t argc = 16;
  napi_value argv[16];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 16)
    return mars_throw(env, "gemm: expected 16 arguments");
  void *heap = NULL;
  size_t heapLen = 0;
  bool isAb = false;
  napi_is_arraybuffer(env, argv[0], &isAb);
  if (!isAb || napi_get_arraybuffer_info(env, argv[0], &heap, &heapLen) != napi_ok)
    return mars_throw(env, "gemm: the first argument must be the wasm heap's ArrayBuffer");
  double aOff, bOff, cOff, biasOff, alphaD, preluOff;
  int32_t m, n, k, biasLen, act, preluLen;
  bool transA, transB;
  if (!get_f64(env, argv[1], &aOff) || !get_f64(env, argv[2], &bOff) || !get_f64(env, argv[3], &cOff) ||
      !get_i32(env, argv[4], &m) || !get_i32(env, argv[5], &n) || !get_i32(env, argv[6], &k) ||
      napi_get_value_bool(env, argv[7], &transA) != napi_ok || napi_get_value_bool(env, argv[8], &transB) != napi_ok ||
      !get_f64(env, argv[10], &biasOff) || !get_i32(env, argv[11], &biasLen) || !get_i32(env, argv[12], &act) ||
      !get_f64(env, argv[13], &alphaD) || !get_f64(env, argv[14], &preluOff) || !get_i32(env, argv[15], &preluLen))
    return mars_throw(env, "gemm: an argument has the wrong type");
  if (m < 0 || n < 0 || k < 0 || act < 0 || act > 6) return mars_throw(env, "gemm: negative size or unknown activation");

  int nd = 0;
  int32_t count[MAX_BATCH_DIMS], sa[MAX_BATCH_DIMS], sb[MAX_BATCH_DIMS];
  napi_valuetype bt;
  napi_typeof(env, argv[9], &bt);
  if (bt != napi_null && bt != napi_undefined) {
    bool isTa = false;
    napi_is_typedarray(env, argv[9], &isTa);
    napi_typedarray_type tt;
    size_t len = 0;
    void *data = NULL;
    if (!isTa || napi_get_typedarray_info(env, argv[9], &tt, &len, &data, NULL, NULL) != napi_ok || tt != napi_int32_array ||
        len % 3 != 0 || len / 3 > MAX_BATCH_DIMS)
      return mars_throw(env, "gemm: batch must be an Int32Array of (count, aStride, bStride) triples, at most 6");
    nd = (int)(len / 3);
    const int32_t *t = data;
    for (int d = 0; d < nd; d++) {
      count[d] = t[3 * d];
      sa[d] = t[3 * d + 1];
      sb[d] = t[3 * d + 2];
      if (count[d] < 0 || sa[d] < 0 || sb[d] < 0) return mars_throw(env, "gemm: negative batch count or stride");
    }
  }
  /* The number of products, and the highest matrix index each operand reaches. */
  double batches = 1, lastA = 0, lastB = 0;
  for (int d = 0; d < nd; d++) {
    batches *= count[d];
    if (count[d] > 0) {
      lastA += (double)(count[d] - 1) * sa[d];
      lastB += (double)(count[d] - 1) * sb[d];
    }
  }
  double sizeA = (double)m * k, sizeB = (double)k * n, sizeC = (double)m * n;
  if (batches == 0 || sizeC == 0) return NULL;
  if (!mars_in_heap(aOff, (lastA + 1) * sizeA, heapLen) || !mars_in_heap(bOff, (lastB + 1) * sizeB, heapLen) ||
      !mars_in_heap(cOff, batches * sizeC, heapLen))
    return mars_throw(env, "gemm: an operand lies outside the heap");
  const float *bias = NULL;
  if (biasOff >= 0) {
    if (biasLen != 1 && biasLen != n) return mars_throw(env, "gemm: bias length must be n or 1");
    if (!mars_in_heap(biasOff, biasLen, heapLen)) return mars_throw(env, "gemm: the bias lies outside the heap");
    bias = (const float *)((char *)heap + (size_t)biasOff);
  }
  const float *prelu = NULL;
  if (act == 6) {
    if (preluOff < 0 || (preluLen != 1 && preluLen != n)) return mars_throw(env, "gemm: prelu weights must be n or 1 values");
    if (!mars_in_heap(preluOff, preluLen, heapLen)) return mars_throw(env, "gemm: the prelu weights lie outside the heap");
    prelu = (const float *)((char *)heap + (size_t)preluOff);
  }

  const float *A = (const float *)((char *)heap + (size_t)aOff);
  const float *B = (const float *)((char *)heap + (size_t)bOff);
  float *C = (float *)((char *)heap + (size_t)cOff);
  int32_t idx[MAX_BATCH_DIMS] = {0};
  size_t ia = 0, ib = 0;
  for (double bi = 0; bi < batches; bi++) {
    if (!sgemm_one(transA, transB, m, n, k, A + ia * (size_t)sizeA, B + ib * (size_t)sizeB, C + (size_t)bi * (size_t)sizeC))
      return mars_throw(env, "gemm: out of memory for the packing buffers");
    if (bias || act) epilogue(C + (size_t)bi * (size_t)sizeC, m, n, bias, biasLen, act, (float)alphaD, prelu, preluLen);
    /* Next batch index, innermost dimension fastest. */
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < count[d]) {
        ia += sa[d];
        ib += sb[d];
        break;
      }
      ia -= (size_t)(count[d] - 1) * sa[d];
      ib -= (size_t)(count[d] - 1) * sb[d];
      idx[d] = 0;
    }
  }
  return NULL;
}

static napi_value make_string(napi_env env, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

static napi_value make_int(napi_env env, int x) {
  napi_value v;
  napi_create_int32(env, x, &v);
  return v;
}

static int current_threads(void) {
#ifdef MARS_WITH_OPENBLAS
  if (g_kernel == KERNEL_OPENBLAS) return openblas_get_num_threads();
#endif
  return 1;
}

/* info(): { built: 'openblas'|'own', kernel: 'openblas'|'own', core, threads, microkernel, openblasConfig } */
static napi_value js_info(napi_env env, napi_callback_info cbinfo) {
  (void)cbinfo;
  napi_value o;
  napi_create_object(env, &o);
#ifdef MARS_WITH_OPENBLAS
  napi_set_named_property(env, o, "built", make_string(env, "openblas"));
  napi_set_named_property(env, o, "openblasConfig", make_string(env, openblas_get_config()));
  napi_set_named_property(env, o, "openblasCore", make_string(env, openblas_get_corename()));
#else
  napi_set_named_property(env, o, "built", make_string(env, "own"));
#endif
  napi_set_named_property(env, o, "kernel", make_string(env, g_kernel == KERNEL_OPENBLAS ? "openblas" : "own"));
  napi_set_named_property(env, o, "microkernel", make_string(env, g_has_avx2 ? "avx2+fma 6x16" : "portable C 6x16"));
  napi_set_named_property(env, o, "threads", make_int(env, current_threads()));
  return o;
}

/* setThreads(n): OpenBLAS's thread count (the own kernel has one thread); returns the count now in effect. */
static napi_value js_set_threads(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t t = 1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1 || !get_i32(env, argv[0], &t) || t < 1)
    return mars_throw(env, "setThreads: expected a positive integer");
#ifdef MARS_WITH_OPENBLAS
  openblas_set_num_threads(t);
  g_threads = t;
#endif
  return make_int(env, current_threads());
}

/* setKernel('openblas'|'own'): 'openblas' only in a build that has it; returns the kernel now in use. */
static napi_value js_set_kernel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char name[16] = {0};
  size_t len = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1 ||
      napi_get_value_string_utf8(env, argv[0], name, sizeof name, &len) != napi_ok)
    return mars_throw(env, "setKernel: expected 'openblas' or 'own'");
  if (strcmp(name, "own") == 0) g_kernel = KERNEL_OWN;
#ifdef MARS_WITH_OPENBLAS
  else if (strcmp(name, "openblas") == 0) g_kernel = KERNEL_OPENBLAS;
#endif
  else return mars_throw(env, "setKernel: this build has no such kernel");
  return make_string(env, g_kernel == KERNEL_OPENBLAS ? "openblas" : "own");
}

NAPI_MODULE_INIT() {
#ifdef MARS_X86
  __builtin_cpu_init();
  g_has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#ifdef MARS_WITH_OPENBLAS
  /* Runs are often several at once: one BLAS thread per process unless asked for more (setThreads). */
  openblas_set_num_threads(1);
#endif
  napi_property_descriptor props[] = {
      {"gemm", NULL, js_gemm, NULL, NULL, NULL, napi_default, NULL},
      {"info", NULL, js_info, NULL, NULL, NULL, napi_default, NULL},
      {"setThreads", NULL, js_set_threads, NULL, NULL, NULL, napi_default, NULL},
      {"setKernel", NULL, js_set_kernel, NULL, NULL, NULL, napi_default, NULL},
      /* mars_adam.c */
      {"sumSquares", NULL, mars_js_sum_squares, NULL, NULL, NULL, napi_default, NULL},
      {"adam", NULL, mars_js_adam, NULL, NULL, NULL, napi_default, NULL},
      /* mars_fused.c */
      {"rmsNorm", NULL, mars_js_rms_norm, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNormGrad", NULL, mars_js_rms_norm_grad, NULL, NULL, NULL, napi_default, NULL},
      {"swiglu", NULL, mars_js_swiglu, NULL, NULL, NULL, napi_default, NULL},
      {"swigluGrad", NULL, mars_js_swiglu_grad, NULL, NULL, NULL, napi_default, NULL},
      {"rope", NULL, mars_js_rope, NULL, NULL, NULL, napi_default, NULL},
      {"logSoftmaxPick", NULL, mars_js_log_softmax_pick, NULL, NULL, NULL, napi_default, NULL},
      {"logSoftmaxPickGrad", NULL, mars_js_log_softmax_pick_grad, NULL, NULL, NULL, napi_default, NULL},
      {"gatherRows", NULL, mars_js_gather_rows, NULL, NULL, NULL, napi_default, NULL},
      {"scatterAddRows", NULL, mars_js_scatter_add_rows, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
