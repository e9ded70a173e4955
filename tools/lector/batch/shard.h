/*
 * shard.h - which inputs a worker takes: `--shard I/N` or the array index of
 * the engine that started it.
 *
 * An input belongs to shard (FNV-1a 64-bit hash of its relative name) mod N,
 * so the split depends on nothing but the name: adding files never moves a
 * file that is already done to another shard, and N workers given the same
 * inputs (on one machine or N) take every input exactly once.
 *
 * Without --shard, the environment of an array job chooses (first match):
 *   JOB_COMPLETION_INDEX (Kubernetes Indexed Job) with LECTOR_SHARD_COUNT
 *     (Kubernetes does not pass the completion count: the manifest sets it);
 *   SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, the index counted from
 *     SLURM_ARRAY_TASK_MIN (0 when unset) in steps of SLURM_ARRAY_TASK_STEP
 *     (1 when unset), so `--array=1-8` and `--array=0-14:2` give 0..7 of 8;
 *     an array with gaps (`--array=0,5`) is refused.
 */
#ifndef LECTOR_BATCH_SHARD_H
#define LECTOR_BATCH_SHARD_H

#include <stddef.h>
#include <stdint.h>

typedef struct batch_shard {
    long index, count;  /* 0 <= index < count; count 1 = every input */
    const char *source; /* "--shard", "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID" or NULL (none) */
} batch_shard;

/* Parses "I/N" (0 <= I < N). 0 on success; -1 with `msg` saying why. */
int batch_shard_parse(const char *s, batch_shard *out, char *msg, size_t msg_len);

/* The shard from `getenv_fn` (getenv, or a test's): out->count 1 and
 * source NULL when none is set. -1 with `msg` when a variable is set but
 * unusable (not a number, index out of range, JOB_COMPLETION_INDEX without
 * LECTOR_SHARD_COUNT). */
int batch_shard_from_env(const char *(*getenv_fn)(const char *), batch_shard *out, char *msg, size_t msg_len);

uint64_t batch_shard_hash(const char *rel);

/* 1 when the input named `rel` belongs to the shard. */
int batch_shard_takes(const batch_shard *s, const char *rel);

#endif
