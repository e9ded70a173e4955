/*
 * resize.c - Resize: modes nearest (all nearest_mode values), linear and
 * cubic on any axes, every coordinate_transformation_mode, extrapolation
 * for tf_crop_and_resize. Separable: per axis, each output index gets up to
 * four input taps with weights; an output element sums the product taps.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

enum { CT_HALF, CT_HALF_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_TF_CROP };
enum { NM_RPF, NM_RPC, NM_FLOOR, NM_CEIL };

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static float orig_coord(int ct, float x, float scale, int64_t in_len, int64_t out_len, float roi_s, float roi_e)
{
    switch (ct) {
    case CT_HALF: return (x + 0.5f) / scale - 0.5f;
    case CT_HALF_SYM: {
        float adj = (float)out_len / (scale * (float)in_len);
        float center = (float)in_len / 2.f, off = center * (1.f - adj);
        return off + (x + 0.5f) / scale - 0.5f;
    }
    case CT_PYTORCH: return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
    case CT_ALIGN: return out_len == 1 ? 0.f : x * (float)(in_len - 1) / (float)(out_len - 1);
    case CT_ASYM: return x / scale;
    case CT_TF_NN: return (x + 0.5f) / scale;
    default:
        return out_len > 1
                   ? roi_s * (float)(in_len - 1) + x * (roi_e - roi_s) * (float)(in_len - 1) / (float)(out_len - 1)
                   : 0.5f * (roi_s + roi_e) * (float)(in_len - 1);
    }
}

static int64_t nearest(int nm, float x)
{
    switch (nm) {
    case NM_RPF: return (x == floorf(x) + 0.5f) ? (int64_t)floorf(x) : (int64_t)roundf(x);
    case NM_RPC: return (x == floorf(x) + 0.5f) ? (int64_t)ceilf(x) : (int64_t)roundf(x);
    case NM_FLOOR: return (int64_t)floorf(x);
    default: return (int64_t)ceilf(x);
    }
}

lector_status rt_ref_Resize(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0];
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const cts[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *ms = rt_attr_string(nd, "mode", "nearest");
    const char *cs = rt_attr_string(nd, "coordinate_transformation_mode", "half_pixel");
    const char *ns = rt_attr_string(nd, "nearest_mode", "round_prefer_floor");
    int mode = lookup(ms, modes, 3), ct = lookup(cs, cts, 7), nm = lookup(ns, nms, 4);
    if (mode < 0 || ct < 0 || nm < 0)
        return lector__error(ctx->err, LECTOR_ERR_UNSUPPORTED_OP,
                             "node %s: Resize mode '%s' / coordinate mode '%s' / nearest mode '%s'", nd->name, ms, cs,
                             ns);
    if (rt_attr_int(nd, "antialias", 0))
        return lector__error(ctx->err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: Resize antialias", nd->name);
    float A = rt_attr_float(nd, "cubic_coeff_a", -0.75f);
    int excl = (int)rt_attr_int(nd, "exclude_outside", 0);
    float extrap = rt_attr_float(nd, "extrapolation_value", 0.f);
    int r = xt->ndim;
    int64_t od[LECTOR_MAX_DIMS];
    float sc[LECTOR_MAX_DIMS];
    const lector_tensor *scales = nd->n_in > 2 && in[2].data && lector_tensor_numel(&in[2]) ? &in[2] : NULL;
    const lector_tensor *sizes = nd->n_in > 3 && in[3].data && lector_tensor_numel(&in[3]) ? &in[3] : NULL;
    lector_status st = rt_resize_params(nd, r, xt->dims, scales, sizes, od, sc, ctx->err);
    if (st) return st;
    for (int a = 0; a < r; a++)
        if (od[a] != out->dims[a])
            return lector__error(ctx->err, LECTOR_ERR_INTERNAL, "node %s: Resize shape mismatch", nd->name);
    /* roi (tf_crop_and_resize): starts then ends over all axes or `axes` */
    float roi_s[LECTOR_MAX_DIMS], roi_e[LECTOR_MAX_DIMS];
    for (int a = 0; a < r; a++) roi_s[a] = 0.f, roi_e[a] = 1.f;
    if (ct == CT_TF_CROP && nd->n_in > 1 && in[1].data) {
        const int64_t *axv;
        int na = rt_attr_ints(nd, "axes", &axv);
        int64_t nr = lector_tensor_numel(&in[1]);
        int k = na ? na : r;
        if (nr != 2 * k)
            return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: roi of length %lld", nd->name,
                                 (long long)nr);
        for (int i = 0; i < k; i++) {
            int a = na ? rt_norm_axis(axv[i], r) : i;
            if (a < 0) return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: axes", nd->name);
            roi_s[a] = (float)rt_f64_at(in[1].dtype, in[1].data, i);
            roi_e[a] = (float)rt_f64_at(in[1].dtype, in[1].data, k + i);
        }
    }
    int64_t n_out = lector_tensor_numel(out);
    if (n_out == 0) return LECTOR_OK;
    int64_t ist[LECTOR_MAX_DIMS], s = 1, total_o = 0;
    for (int a = r - 1; a >= 0; a--) {
        ist[a] = s;
        s *= xt->dims[a];
        total_o += od[a];
    }
    /* per-axis taps: offsets (elements), weights, out-of-range flags */
    int64_t *toff = lector__malloc(sizeof(int64_t) * (size_t)(4 * total_o));
    float *tw = lector__malloc(sizeof(float) * (size_t)(4 * total_o));
    unsigned char *oob = lector__calloc((size_t)total_o, 1);
    if (!toff || !tw || !oob) {
        lector__free(toff);
        lector__free(tw);
        lector__free(oob);
        return rt_ref_oom(nd, ctx);
    }
    int64_t base[LECTOR_MAX_DIMS];
    int nt[LECTOR_MAX_DIMS];
    int64_t pos = 0;
    for (int a = 0; a < r; a++) {
        base[a] = pos;
        int64_t L = xt->dims[a], O = od[a];
        int identity = L == O && sc[a] == 1.f && ct != CT_TF_CROP;
        nt[a] = identity || mode == 0 ? 1 : mode == 1 ? 2 : 4;
        for (int64_t o = 0; o < O; o++) {
            int64_t *to = toff + 4 * (pos + o);
            float *w = tw + 4 * (pos + o);
            if (identity) {
                to[0] = o * ist[a];
                w[0] = 1.f;
                continue;
            }
            float x = orig_coord(ct, (float)o, sc[a], L, O, roi_s[a], roi_e[a]);
            if (ct == CT_TF_CROP && (x < 0.f || x > (float)(L - 1))) oob[pos + o] = 1;
            if (mode == 0) {
                int64_t i = nearest(nm, x);
                i = LECTOR_MIN(LECTOR_MAX(i, 0), L - 1);
                to[0] = i * ist[a];
                w[0] = 1.f;
            } else if (mode == 1) {
                float xc = fmaxf(0.f, fminf(x, (float)(L - 1)));
                int64_t i0 = (int64_t)xc, i1 = LECTOR_MIN(i0 + 1, L - 1);
                float f = xc - (float)i0;
                to[0] = i0 * ist[a];
                to[1] = i1 * ist[a];
                w[0] = 1.f - f;
                w[1] = f;
            } else {
                float fl = floorf(x), t = x - fl;
                int64_t i = (int64_t)fl;
                float c[4];
                c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
                c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
                c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
                c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
                float sum = 0.f;
                for (int k = 0; k < 4; k++) {
                    int64_t j = i - 1 + k;
                    if (excl && (j < 0 || j >= L)) c[k] = 0.f;
                    sum += c[k];
                    j = LECTOR_MIN(LECTOR_MAX(j, 0), L - 1);
                    to[k] = j * ist[a];
                }
                for (int k = 0; k < 4; k++) w[k] = (excl && sum != 0.f) ? c[k] / sum : c[k];
            }
        }
        pos += O;
    }
    const float *x = xt->data;
    float *y = out->data;
    int act[LECTOR_MAX_DIMS], n_act = 0, combos = 1;
    for (int a = 0; a < r; a++)
        if (nt[a] > 1) {
            act[n_act++] = a;
            combos *= nt[a];
        }
    int64_t inner = od[r - 1], rows = n_out / inner;
#pragma omp parallel for num_threads(ctx->threads) if (n_out > 65536)
    for (int64_t row = 0; row < rows; row++) {
        int64_t idx[LECTOR_MAX_DIMS];
        int64_t rem = row;
        for (int a = r - 2; a >= 0; a--) {
            idx[a] = rem % od[a];
            rem /= od[a];
        }
        if (combos == 1) { /* nearest (or identity) on every axis: a gather */
            int64_t off_row = 0;
            int outside = 0;
            for (int a = 0; a < r - 1; a++) {
                off_row += toff[4 * (base[a] + idx[a])];
                outside |= oob[base[a] + idx[a]];
            }
            const int64_t *tl = toff + 4 * base[r - 1];
            const unsigned char *ol = oob + base[r - 1];
            float *yr = y + row * inner;
            for (int64_t o = 0; o < inner; o++) yr[o] = (outside || ol[o]) ? extrap : x[off_row + tl[4 * o]];
            continue;
        }
        for (int64_t o = 0; o < inner; o++) {
            idx[r - 1] = o;
            int outside = 0;
            for (int a = 0; a < r; a++) outside |= oob[base[a] + idx[a]];
            if (outside) {
                y[row * inner + o] = extrap;
                continue;
            }
            int64_t off0 = 0;
            for (int a = 0; a < r; a++)
                if (nt[a] == 1) off0 += toff[4 * (base[a] + idx[a])];
            float acc = 0.f;
            for (int cmb = 0; cmb < combos; cmb++) {
                int c = cmb;
                int64_t off = off0;
                float w = 1.f;
                for (int k = n_act - 1; k >= 0; k--) {
                    int a = act[k];
                    int t = c % nt[a];
                    c /= nt[a];
                    int64_t ti = 4 * (base[a] + idx[a]) + t;
                    off += toff[ti];
                    w *= tw[ti];
                }
                if (w != 0.f) acc += w * x[off];
            }
            y[row * inner + o] = acc;
        }
    }
    lector__free(toff);
    lector__free(tw);
    lector__free(oob);
    return LECTOR_OK;
}
