/*
 * model_image.c - lector_rt_image.h: a model's input made on the device from
 * 8-bit pixels (the backend's run_images), and the loaders whose outputs are
 * reduced for CTC decoders.
 */
#include <string.h>

#include "rt/model.h"
#include "util/util.h"

lector_status lector_model_load_file_argmax(const char *path, const lector_model_options *opt, lector_model **out,
                                            lector_error *err)
{
    return rt_model_load_file(path, opt, 1, out, err);
}

lector_status lector_model_load_memory_argmax(const void *data, size_t size, const char *name,
                                              const lector_model_options *opt, lector_model **out, lector_error *err)
{
    return rt_model_load_memory(data, size, name, opt, 1, out, err);
}

lector_status lector_model_load_file_top2(const char *path, const lector_model_options *opt, lector_model **out,
                                          lector_error *err)
{
    return rt_model_load_file(path, opt, 2, out, err);
}

lector_status lector_model_load_memory_top2(const void *data, size_t size, const char *name,
                                            const lector_model_options *opt, lector_model **out, lector_error *err)
{
    return rt_model_load_memory(data, size, name, opt, 2, out, err);
}

int lector_model_takes_images(const lector_model *m)
{
    if (!m || m->g->n_inputs != 1 || !m->be->iface->run_images) return 0;
    const rt_value *v = &m->g->values[m->g->inputs[0]];
    return v->dtype == LECTOR_DTYPE_FLOAT32 && (v->ndim < 0 || v->ndim == 4);
}

/* One row against the first (channels, out_height) and the tensor width;
 * its tables against the source they index (the turned crop, or the pixels). */
static lector_status check_row(const lector_model *m, const lector_image_input *im, size_t i,
                               const lector_image_input *first, int width, lector_error *err)
{
    const char *name = m->g->name;
    if (!im->pixels || !im->xofs || !im->alpha || !im->yofs || !im->beta || !im->lut || im->width <= 0 ||
        im->height <= 0 || im->channels < 1 || im->channels > 4 || im->out_width <= 0 || im->out_height <= 0 ||
        im->stride < (size_t)im->width * (size_t)im->channels)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: invalid image input %zu (%dx%d, %d channels)", name,
                             i, im->width, im->height, im->channels);
    if (im->channels != first->channels || im->out_height != first->out_height || im->out_width > width)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                             "%s: image input %zu (%d channels, %dx%d) does not fit the batch (%d channels, "
                             "height %d, width %d)",
                             name, i, im->channels, im->out_width, im->out_height, first->channels, first->out_height,
                             width);
    int sw = im->width, sh = im->height;
    if (im->warp) {
        if (!im->cubic || im->crop_width <= 0 || im->crop_height <= 0 || im->turns < 0 || im->turns > 3 ||
            im->origin_x < 0 || im->origin_y < 0 || im->full_width - im->width < im->origin_x ||
            im->full_height - im->height < im->origin_y)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                                 "%s: image input %zu: invalid crop (%dx%d, turns %d, region %dx%d at %d,%d of "
                                 "%dx%d)",
                                 name, i, im->crop_width, im->crop_height, im->turns, im->width, im->height,
                                 im->origin_x, im->origin_y, im->full_width, im->full_height);
        sw = im->turns & 1 ? im->crop_height : im->crop_width;
        sh = im->turns & 1 ? im->crop_width : im->crop_height;
    }
    for (int x = 0; x < im->out_width; x++)
        if (im->xofs[x] < 0 || im->xofs[x] >= sw)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: image input %zu: column table out of range",
                                 name, i);
    for (int y = 0; y < 2 * im->out_height; y++)
        if (im->yofs[y] < 0 || im->yofs[y] >= sh)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: image input %zu: row table out of range", name,
                                 i);
    return LECTOR_OK;
}

lector_status lector_model_run_images(const lector_model *cm, const lector_image_input *rows, size_t n_rows,
                                      size_t batch, int width, lector_tensor **outputs, size_t *n_outputs,
                                      lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !rows || !outputs || !n_outputs)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run_images: NULL argument");
    *outputs = NULL;
    *n_outputs = 0;
    if (!lector_model_takes_images(m))
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: the %s backend takes no image input", m->g->name,
                             m->be->iface->name);
    if (!n_rows || batch < n_rows || batch > INT32_MAX || width <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: %zu image rows in a batch of %zu, width %d",
                             m->g->name, n_rows, batch, width);
    for (size_t i = 0; i < n_rows; i++) {
        lector_status st = check_row(m, &rows[i], i, &rows[0], width, err);
        if (st) return st;
    }
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {(int64_t)batch, rows[0].channels, rows[0].out_height, width}, NULL};
    return rt_model_run(m, &in, rows, n_rows, outputs, n_outputs, err);
}

lector_status lector_model_run_image(const lector_model *m, const lector_image_input *im, lector_tensor **outputs,
                                     size_t *n_outputs, lector_error *err)
{
    if (!im) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run_image: NULL argument");
    return lector_model_run_images(m, im, 1, 1, im->out_width, outputs, n_outputs, err);
}
