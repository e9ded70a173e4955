/* host_profile.c - LECTOR_HOST_PROFILE's sums and their report at exit (host_profile.h). */
#include "rt/host_profile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt/ops.h"
#include "util/testctl.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double sum_ms[RT_OP_COUNT][RT_PROF_KINDS];
static long count[RT_OP_COUNT][RT_PROF_KINDS];

int rt_host_profiling(void)
{
    long v = lector__tc_long(LECTOR__TC_HOST_PROFILE, 0);
    return v <= 0 ? 0 : v >= 2 ? 2 : 1;
}

static const char *const kind_name[RT_PROF_KINDS] = {"reference", "backend", "chain"};

static void report(void)
{
    double total = 0;
    for (int o = 0; o < RT_OP_COUNT; o++)
        for (int k = 0; k < RT_PROF_KINDS; k++) total += sum_ms[o][k];
    fprintf(stderr, "host profile (LECTOR_HOST_PROFILE): %.1f ms in the host executor\n", total);
    fprintf(stderr, "%-22s %-10s %10s %8s %10s %6s\n", "operator", "kernel", "ms", "runs", "ms/run", "share");
    /* largest first: a selection over the few rows that ran */
    static char done[RT_OP_COUNT][RT_PROF_KINDS];
    for (;;) {
        int bo = -1, bk = 0;
        for (int o = 0; o < RT_OP_COUNT; o++)
            for (int k = 0; k < RT_PROF_KINDS; k++)
                if (count[o][k] && !done[o][k] && (bo < 0 || sum_ms[o][k] > sum_ms[bo][bk])) bo = o, bk = k;
        if (bo < 0) break;
        done[bo][bk] = 1;
        fprintf(stderr, "%-22s %-10s %10.2f %8ld %10.4f %5.1f%%\n", rt_op_table[bo].name, kind_name[bk], sum_ms[bo][bk],
                count[bo][bk], sum_ms[bo][bk] / (double)count[bo][bk], total > 0 ? 100 * sum_ms[bo][bk] / total : 0);
    }
}

void rt_host_profile_node(const rt_plan *p, int s, int n, rt_prof_kind kind, double ms)
{
    const rt_graph *g = p->g;
    const rt_node *nd = &g->nodes[p->order[s]];
    int op = nd->op;
    if (op < 0 || op >= RT_OP_COUNT || kind < 0 || kind >= RT_PROF_KINDS) return;
    static int registered;
    if (rt_host_profiling() >= 2) {
        const rt_node *last = &g->nodes[p->order[s + n - 1]];
        const rt_value *v = last->out[0] >= 0 ? &g->values[last->out[0]] : NULL;
        char dims[64] = "";
        for (int d = 0, at = 0; v && d < v->ndim && at < (int)sizeof dims - 24; d++)
            at += snprintf(dims + at, sizeof dims - at, d ? "x%lld" : "%lld", (long long)v->dims[d]);
        fprintf(stderr, "host step %4d %-18s %-9s %9.4f ms %-20s %s", s, rt_op_table[op].name, kind_name[kind], ms,
                dims, nd->name);
        for (int k = 1; k < n; k++) fprintf(stderr, " +%s", rt_op_table[g->nodes[p->order[s + k]].op].name);
        fputc('\n', stderr);
    }
    pthread_mutex_lock(&lock);
    if (!registered++) atexit(report);
    sum_ms[op][kind] += ms;
    count[op][kind]++;
    pthread_mutex_unlock(&lock);
}
