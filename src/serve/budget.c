/* budget.c - see budget.h. */
#include "budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A size file of the cgroup: its number, 0 for "max" or unreadable. */
static size_t read_size_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    unsigned long long v;
    if (!strncmp(buf, "max", 3) || sscanf(buf, "%llu", &v) != 1) return 0;
    /* cgroup v1 says "no limit" with a huge number near LONG_MAX */
    if (v >= (1ull << 60)) return 0;
    return (size_t)v;
}

/* This process's cgroup path for `controller` ("" for v2's unified line). */
static int cgroup_path(const char *controller, char *out, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[1024];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1;
        int match = *controller ? strstr(ctrls, controller) != NULL : (line[0] == '0' && !*ctrls);
        if (match) {
            snprintf(out, len, "%s", c2 + 1);
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

size_t serve_memory_limit(size_t configured, const char **source)
{
    if (configured) {
        *source = "--memory-limit";
        return configured;
    }
    char rel[512], path[768];
    size_t v;
    if (!cgroup_path("", rel, sizeof rel)) {
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", rel);
        if ((v = read_size_file(path))) {
            *source = "cgroup v2 memory.max";
            return v;
        }
    }
    if (!cgroup_path("memory", rel, sizeof rel)) {
        snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", rel);
        if ((v = read_size_file(path))) {
            *source = "cgroup v1 memory.limit_in_bytes";
            return v;
        }
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *source = "RAM";
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)4 << 30;
}

size_t serve_resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, res = 0;
    int ok = fscanf(f, "%lu %lu", &size, &res) == 2;
    fclose(f);
    return ok ? res * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

void serve_budget_init(serve_budget *b, size_t limit)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    b->limit = limit;
}

void serve_budget_destroy(serve_budget *b) { pthread_mutex_destroy(&b->mu); }

size_t serve_budget_plans_share(size_t limit) { return limit / 10 * 9 / 5 * 2; }

int serve_budget_ready(serve_budget *b, size_t base, size_t plans, size_t min_request)
{
    size_t usable = b->limit / 10 * 9;
    pthread_mutex_lock(&b->mu);
    b->base = base;
    b->plans = plans;
    b->requests = usable > base + plans ? usable - base - plans : 0;
    int ok = b->requests >= min_request;
    pthread_mutex_unlock(&b->mu);
    return ok ? 0 : -1;
}

int serve_budget_reserve(serve_budget *b, size_t n, int *never)
{
    *never = 0;
    pthread_mutex_lock(&b->mu);
    int ok = b->reserved + n <= b->requests;
    if (ok) b->reserved += n;
    *never = n > b->requests;
    pthread_mutex_unlock(&b->mu);
    return ok ? 0 : -1;
}

void serve_budget_release(serve_budget *b, size_t n)
{
    pthread_mutex_lock(&b->mu);
    b->reserved = n > b->reserved ? 0 : b->reserved - n;
    pthread_mutex_unlock(&b->mu);
}

void serve_budget_job_done(serve_budget *b, double s)
{
    pthread_mutex_lock(&b->mu);
    b->service_s = b->service_s > 0 ? 0.8 * b->service_s + 0.2 * s : s;
    b->service_hi = s > 0.95 * b->service_hi ? s : 0.95 * b->service_hi;
    b->recent[b->next_recent] = s;
    b->next_recent = (b->next_recent + 1) % SERVE_RECENT_JOBS;
    if (b->n_recent < SERVE_RECENT_JOBS) b->n_recent++;
    pthread_mutex_unlock(&b->mu);
}

static int by_seconds(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double serve_budget_expected_s(serve_budget *b, int ahead, int workers)
{
    double t[SERVE_RECENT_JOBS];
    pthread_mutex_lock(&b->mu);
    double mean = b->service_s, s = mean > b->service_hi ? mean : b->service_hi;
    int n = b->n_recent;
    memcpy(t, b->recent, sizeof t[0] * (size_t)n);
    pthread_mutex_unlock(&b->mu);
    if (n >= 8) { /* enough jobs for their slow end to mean something */
        qsort(t, (size_t)n, sizeof t[0], by_seconds);
        double p95 = t[(n * 95 + 99) / 100 - 1];
        s = p95 > mean ? p95 : mean;
    }
    if (workers < 1) workers = 1;
    /* a free worker takes it at once; otherwise it waits for the jobs
     * beyond the busy workers' to go, shared by the workers, then its own */
    int waiting = ahead >= workers ? ahead - workers + 1 : 0;
    return s * ((double)waiting / workers + 1);
}

double serve_budget_slowest_s(serve_budget *b)
{
    pthread_mutex_lock(&b->mu);
    double s = b->service_s;
    if (b->n_recent >= 8) { /* a job that starts now must finish, or its reading is wasted on a 504 */
        for (int i = 0; i < b->n_recent; i++)
            if (b->recent[i] > s) s = b->recent[i];
    } else if (b->service_hi > s) {
        s = b->service_hi;
    }
    pthread_mutex_unlock(&b->mu);
    return s;
}

int serve_budget_shed(serve_budget *b, double remaining_s, double timeout_s)
{
    double own = serve_budget_slowest_s(b);
    return own > 0 && own <= timeout_s && own > remaining_s;
}
