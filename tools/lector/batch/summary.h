/*
 * summary.h - the record of a batch: counts, pages, speed, versions and every
 * failure with its reason, written as summary.json in the output directory
 * (summary.shard-I-of-N.json for a shard, so that shards sharing a directory
 * do not overwrite each other's).
 */
#ifndef LECTOR_BATCH_SUMMARY_H
#define LECTOR_BATCH_SUMMARY_H

#include <stddef.h>

#include "progress.h"
#include "shard.h"

typedef struct batch_failure {
    char *file;  /* the input's path */
    char *rel;   /* its relative name */
    char *error; /* the message: names the file and the problem */
    char *code;  /* "LECTOR_ERR_DECODE", ... ("LECTOR_ERR_IO" for an output that could not be written) */
} batch_failure;

typedef struct batch_summary {
    batch_counts counts;
    batch_failure *failures;
    size_t n_failures, cap_failures;
    int stopped_early; /* --max-failures reached */
} batch_summary;

/* Records a failure (counts.failed is the caller's). -1 on allocation failure. */
int batch_summary_add_failure(batch_summary *s, const char *file, const char *rel, const char *error, const char *code);

typedef struct batch_summary_meta {
    const char *version;  /* lector_version() */
    const char *device;   /* lector_engine_device() */
    const char **formats; /* requested per-file formats */
    size_t n_formats;
    const batch_shard *shard;
    double seconds; /* wall time of the run */
} batch_summary_meta;

/* The summary as a JSON document (malloc'd; NULL on allocation failure). */
char *batch_summary_json(const batch_summary *s, const batch_summary_meta *m);

/* "summary.json" or "summary.shard-I-of-N.json" (malloc'd). */
char *batch_summary_name(const batch_shard *shard);

void batch_summary_free(batch_summary *s);

#endif
