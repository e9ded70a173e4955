/*
 * atomic_file.h - outputs that are whole or absent: each is written to a
 * temporary name beside it, flushed to disk, then renamed over its final name
 * (rename is atomic within a directory), so a process killed at any point
 * leaves either the complete previous file, the complete new one or none,
 * never a half one. A killed process's temporary file is left behind under a
 * fixed name (.<name>.lector-tmp in the same directory): the next run that
 * writes or checks that output removes or reuses it. Two processes must not
 * write the same output at the same time (shards never do).
 */
#ifndef LECTOR_BATCH_ATOMIC_FILE_H
#define LECTOR_BATCH_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#define ATOMIC_FILE_TEMP_SUFFIX ".lector-tmp"

typedef struct atomic_file {
    FILE *f; /* write the contents here */
    char *final_path;
    char *temp_path;
} atomic_file;

/* Opens the temporary file of `final_path`, creating its missing parent
 * directories. 0 on success; -1 with `msg` naming the path and the error. */
int atomic_file_open(atomic_file *af, const char *final_path, char *msg, size_t msg_len);

/* Flushes, syncs and closes the temporary file, then renames it to the final
 * path. 0 on success; -1 with `msg` (the temporary file is then removed).
 * Either way `af` is released. */
int atomic_file_commit(atomic_file *af, char *msg, size_t msg_len);

/* Closes and removes the temporary file; releases `af`. */
void atomic_file_abort(atomic_file *af);

/* The temporary name of `final_path` (malloc'd; NULL on allocation failure). */
char *atomic_file_temp_path(const char *final_path);

/* `dir`/`rel`.`ext` (malloc'd; NULL on allocation failure). */
char *atomic_file_output_path(const char *dir, const char *rel, const char *ext);

#endif
