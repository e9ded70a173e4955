/* shard.c - see shard.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard.h"

static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0) return -1;
    *out = v;
    return 0;
}

int batch_shard_parse(const char *s, batch_shard *out, char *msg, size_t msg_len)
{
    const char *slash = strchr(s, '/');
    char idx[32];
    long i, n;
    if (!slash || (size_t)(slash - s) >= sizeof idx) goto bad;
    memcpy(idx, s, (size_t)(slash - s));
    idx[slash - s] = 0;
    if (parse_long(idx, &i) || parse_long(slash + 1, &n) || n < 1) goto bad;
    if (i >= n) {
        snprintf(msg, msg_len, "--shard %s: the index counts from 0 and must be below the count", s);
        return -1;
    }
    *out = (batch_shard){i, n, "--shard"};
    return 0;
bad:
    snprintf(msg, msg_len, "--shard expects I/N (0 <= I < N), got '%s'", s);
    return -1;
}

static int env_long(const char *(*get)(const char *), const char *name, long *out, char *msg, size_t msg_len)
{
    const char *v = get(name);
    if (parse_long(v, out)) {
        snprintf(msg, msg_len, "%s='%s' is not a non-negative integer", name, v);
        return -1;
    }
    return 0;
}

int batch_shard_from_env(const char *(*get)(const char *), batch_shard *out, char *msg, size_t msg_len)
{
    *out = (batch_shard){0, 1, NULL};
    long i, n, min = 0, step = 1;
    if (get("JOB_COMPLETION_INDEX")) {
        if (!get("LECTOR_SHARD_COUNT")) {
            snprintf(msg, msg_len,
                     "JOB_COMPLETION_INDEX is set but LECTOR_SHARD_COUNT is not: set it to the Job's completions "
                     "(or pass --shard I/N)");
            return -1;
        }
        if (env_long(get, "JOB_COMPLETION_INDEX", &i, msg, msg_len) ||
            env_long(get, "LECTOR_SHARD_COUNT", &n, msg, msg_len))
            return -1;
        out->source = "JOB_COMPLETION_INDEX";
    } else if (get("SLURM_ARRAY_TASK_ID") && get("SLURM_ARRAY_TASK_COUNT")) {
        if (env_long(get, "SLURM_ARRAY_TASK_ID", &i, msg, msg_len) ||
            env_long(get, "SLURM_ARRAY_TASK_COUNT", &n, msg, msg_len) ||
            (get("SLURM_ARRAY_TASK_MIN") && env_long(get, "SLURM_ARRAY_TASK_MIN", &min, msg, msg_len)) ||
            (get("SLURM_ARRAY_TASK_STEP") && env_long(get, "SLURM_ARRAY_TASK_STEP", &step, msg, msg_len)))
            return -1;
        if (i < min || step < 1 || (i - min) % step) {
            snprintf(msg, msg_len, "SLURM_ARRAY_TASK_ID=%ld is not SLURM_ARRAY_TASK_MIN=%ld plus a multiple of %ld", i,
                     min, step);
            return -1;
        }
        i = (i - min) / step;
        out->source = "SLURM_ARRAY_TASK_ID";
    } else {
        return 0;
    }
    if (n < 1 || i >= n) {
        snprintf(msg, msg_len, "%s: shard index %ld is not below the count %ld (a sparse Slurm array such as 1,5,9?)",
                 out->source, i, n);
        return -1;
    }
    out->index = i;
    out->count = n;
    return 0;
}

uint64_t batch_shard_hash(const char *rel)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

int batch_shard_takes(const batch_shard *s, const char *rel)
{
    return s->count <= 1 || (long)(batch_shard_hash(rel) % (uint64_t)s->count) == s->index;
}
