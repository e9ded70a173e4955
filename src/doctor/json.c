/* json.c - a small JSON writer for the doctor's report: objects, arrays,
 * strings (escaped per RFC 8259, invalid UTF-8 passed through as bytes),
 * numbers, booleans and null. Two-space indentation. */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"

static void indent(doctor_json *j)
{
    gpuenv_buf_puts(&j->b, "\n");
    for (int i = 0; i < j->depth; i++) gpuenv_buf_puts(&j->b, "  ");
}

static void quoted(doctor_json *j, const char *s)
{
    gpuenv_buf_puts(&j->b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': gpuenv_buf_puts(&j->b, "\\\""); break;
        case '\\': gpuenv_buf_puts(&j->b, "\\\\"); break;
        case '\n': gpuenv_buf_puts(&j->b, "\\n"); break;
        case '\r': gpuenv_buf_puts(&j->b, "\\r"); break;
        case '\t': gpuenv_buf_puts(&j->b, "\\t"); break;
        default:
            if (*p < 0x20)
                gpuenv_buf_printf(&j->b, "\\u%04x", *p);
            else
                gpuenv_buf_putn(&j->b, (const char *)p, 1);
        }
    }
    gpuenv_buf_puts(&j->b, "\"");
}

/* A comma before every member but the first, then the key if any. */
static void member(doctor_json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth]) gpuenv_buf_puts(&j->b, ",");
        j->first[j->depth] = 0;
        indent(j);
    }
    if (key) {
        quoted(j, key);
        gpuenv_buf_puts(&j->b, ": ");
    }
}

void doctor_json_open(doctor_json *j, char bracket, const char *key)
{
    member(j, key);
    gpuenv_buf_putn(&j->b, &bracket, 1);
    if (j->depth < 31) j->depth++;
    j->first[j->depth] = 1;
}

void doctor_json_close(doctor_json *j, char bracket)
{
    int empty = j->first[j->depth];
    if (j->depth > 0) j->depth--;
    if (!empty) indent(j);
    gpuenv_buf_putn(&j->b, &bracket, 1);
}

void doctor_json_str(doctor_json *j, const char *key, const char *v)
{
    member(j, key);
    quoted(j, v ? v : "");
}

void doctor_json_num(doctor_json *j, const char *key, double v)
{
    member(j, key);
    gpuenv_buf_printf(&j->b, "%.17g", v);
}

void doctor_json_bool(doctor_json *j, const char *key, int v)
{
    member(j, key);
    gpuenv_buf_puts(&j->b, v ? "true" : "false");
}

void doctor_json_null(doctor_json *j, const char *key)
{
    member(j, key);
    gpuenv_buf_puts(&j->b, "null");
}
