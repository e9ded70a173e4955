/*
 * inputs.h - the inputs of a batch: files, directories and @list files,
 * expanded into one list in a stable order.
 *
 * Each argument is, in the order given:
 *   - `-`: one image read from standard input (relative name "stdin");
 *   - `@FILE` / `@-`: a list of inputs, one per line (empty lines skipped, a
 *     trailing CR dropped), each expanded like an argument (no nested @);
 *   - a directory: every file below it whose extension is a recognised image
 *     type (inputs_is_image_name), recursively, names sorted bytewise in each
 *     directory; a symbolic link is followed only when it resolves inside the
 *     directory named (unless follow_symlinks), and a directory is never
 *     entered twice along one path (no loops);
 *   - anything else: a file, taken as it is (a missing or corrupt one fails
 *     when it is read, with its own message).
 *
 * Every input has a relative name `rel`: its path below the directory that was
 * named, or for a file named directly its path less any leading '/', '.' and
 * '..' parts. Outputs go to OUTDIR/<rel>.<ext> and shards hash `rel`, so both
 * stay the same when files are added and whichever machine runs the shard.
 */
#ifndef LECTOR_BATCH_INPUTS_H
#define LECTOR_BATCH_INPUTS_H

#include <stddef.h>
#include <stdio.h>

typedef struct batch_input {
    char *path;    /* as opened; "-" for standard input */
    char *rel;     /* relative name (see above) */
    char *error;   /* non-NULL: found unusable while listing (an unreadable
                      directory, a list that cannot be read): a failure */
    int duplicate; /* the error is batch_inputs_mark_duplicates()'s */
} batch_input;

typedef struct batch_inputs {
    batch_input *items;
    size_t n, cap;
    size_t symlinks_skipped; /* links leading out of their tree, not followed */
} batch_inputs;

typedef struct batch_inputs_options {
    int follow_symlinks; /* 1: follow links out of the tree too */
    FILE *list_stdin;    /* what `@-` reads (stdin; a test passes its own) */
} batch_inputs_options;

/* Expands args[0..n-1] into `out` (zeroed by the caller). 0 on success; -1 on
 * allocation failure or a usage problem, with `msg` (msg_len bytes) saying
 * which (e.g. a nested @list). Unreadable directories and lists are not
 * usage problems: they become inputs with `error` set. */
int batch_inputs_collect(batch_inputs *out, const char *const *args, size_t n, const batch_inputs_options *opt,
                         char *msg, size_t msg_len);

/* 1 when `name` ends in .jpg .jpeg .jpe .png .tif .tiff .webp or .bmp (any case). */
int batch_inputs_is_image_name(const char *name);

/* Marks with an error every input whose `rel` equals an earlier one's (their
 * outputs would overwrite each other). Returns how many; -1 on allocation
 * failure. */
long batch_inputs_mark_duplicates(batch_inputs *in);

void batch_inputs_free(batch_inputs *in);

#endif
