/*
 * mars-lab native kernels (issue 16): what the addon's source files share. mars_gemm.c holds the matrix products and
 * the module's registration; mars_adam.c the optimiser's fused passes; mars_fused.c and mars_logsoftmax.c the
 * transformer's fused ops (their shared helpers in mars_fused.h).
 */
#ifndef MARS_NATIVE_H
#define MARS_NATIVE_H
#define NAPI_VERSION 8
#include <node_api.h>
#include <math.h>
#include <stdint.h>

static inline napi_value mars_throw(napi_env env, const char *msg) {
  napi_throw_error(env, "MARS_NATIVE", msg);
  return NULL;
}

/* A byte offset into the heap, 4-aligned, that leaves room for `count` floats. */
static inline int mars_in_heap(double off, double count, size_t len) {
  return off >= 0 && off == floor(off) && ((uint64_t)off % 4) == 0 && off + count * 4.0 <= (double)len;
}

napi_value mars_js_sum_squares(napi_env env, napi_callback_info info);
napi_value mars_js_adam(napi_env env, napi_callback_info info);
napi_value mars_js_rms_norm(napi_env env, napi_callback_info info);
napi_value mars_js_rms_norm_grad(napi_env env, napi_callback_info info);
napi_value mars_js_swiglu(napi_env env, napi_callback_info info);
napi_value mars_js_swiglu_grad(napi_env env, napi_callback_info info);
napi_value mars_js_rope(napi_env env, napi_callback_info info);
napi_value mars_js_log_softmax_pick(napi_env env, napi_callback_info info);
napi_value mars_js_log_softmax_pick_grad(napi_env env, napi_callback_info info);
napi_value mars_js_gather_rows(napi_env env, napi_callback_info info);
napi_value mars_js_scatter_add_rows(napi_env env, napi_callback_info info);

#endif
