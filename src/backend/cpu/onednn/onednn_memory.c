/*
 * onednn_memory.c - a plan's arena: the offset of every arena slot, from
 * the steps that first write and last read it (best fit over a free list),
 * with the shared scratchpad at the end.
 */
#include "backend/cpu/onednn/onednn_internal.h"
#include "util/util.h"

typedef struct blk {
    size_t off, size;
} blk;

static size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

int dn_mem_plan(dn_cc *c)
{
    dn_plan *dp = c->dp;
    for (int i = 0; i < dp->n_steps; i++) {
        dn_step *s = &dp->steps[i];
        int ids[DN_MAX_ARGS + 24], k = 0;
        if (s->kind == DN_STEP_PRIM)
            for (int a = 0; a < s->n_args; a++) ids[k++] = s->slot[a];
        for (int a = 0; a < s->n_in; a++) ids[k++] = s->in_slot[a];
        for (int a = 0; a < s->n_out; a++) ids[k++] = s->out_slot[a];
        for (int j = 0; j < k; j++) {
            if (ids[j] < 0) continue;
            dn_slot *sl = &dp->slots[ids[j]];
            if (sl->first < 0) sl->first = i;
            sl->last = i;
        }
    }
    for (int i = 0; i < c->g->n_outputs; i++) {
        int s = dp->vplain[c->g->outputs[i]];
        if (s >= 0) dp->slots[s].last = dp->n_steps;
    }
    blk *fl = lector__malloc(sizeof *fl * (size_t)(dp->n_slots + 1));
    if (!fl) return -1;
    int nf = 0;
    size_t top = 0, peak = 0;
    /* slots ordered by first use: walk steps */
    int *by_first = lector__calloc((size_t)dp->n_steps + 2, sizeof(int));
    int *next = lector__malloc(sizeof(int) * (size_t)(dp->n_slots + 1));
    int *by_last = lector__calloc((size_t)dp->n_steps + 2, sizeof(int));
    int *next2 = lector__malloc(sizeof(int) * (size_t)(dp->n_slots + 1));
    if (!by_first || !next || !by_last || !next2) {
        lector__free(fl);
        lector__free(by_first);
        lector__free(next);
        lector__free(by_last);
        lector__free(next2);
        return -1;
    }
    for (int i = 0; i <= dp->n_steps + 1; i++) by_first[i] = by_last[i] = -1;
    for (int i = 0; i < dp->n_slots; i++) {
        dn_slot *sl = &dp->slots[i];
        if (sl->kind != DN_SLOT_ARENA || i == dp->scratch_slot || sl->first < 0) continue;
        next[i] = by_first[sl->first];
        by_first[sl->first] = i;
        next2[i] = by_last[sl->last];
        by_last[sl->last] = i;
    }
    for (int st = 0; st <= dp->n_steps; st++) {
        for (int i = by_first[st]; i >= 0; i = next[i]) {
            size_t sz = al64(dp->slots[i].size ? dp->slots[i].size : 1);
            int best = -1;
            for (int b = 0; b < nf; b++)
                if (fl[b].size >= sz && (best < 0 || fl[b].size < fl[best].size)) best = b;
            if (best >= 0) {
                dp->slots[i].off = fl[best].off;
                fl[best].off += sz;
                fl[best].size -= sz;
                if (!fl[best].size) fl[best] = fl[--nf];
            } else {
                dp->slots[i].off = top;
                top += sz;
            }
            if (top > peak) peak = top;
        }
        for (int i = by_last[st]; i >= 0; i = next2[i]) {
            size_t sz = al64(dp->slots[i].size ? dp->slots[i].size : 1);
            size_t off = dp->slots[i].off;
            /* merge with neighbours */
            int merged = 1;
            while (merged) {
                merged = 0;
                for (int b = 0; b < nf; b++) {
                    if (fl[b].off + fl[b].size == off) {
                        off = fl[b].off;
                        sz += fl[b].size;
                        fl[b] = fl[--nf];
                        merged = 1;
                        break;
                    }
                    if (off + sz == fl[b].off) {
                        sz += fl[b].size;
                        fl[b] = fl[--nf];
                        merged = 1;
                        break;
                    }
                }
            }
            if (off + sz == top)
                top = off;
            else
                fl[nf++] = (blk){off, sz};
        }
    }
    /* unused slots (never referenced): give them a valid offset */
    for (int i = 0; i < dp->n_slots; i++)
        if (dp->slots[i].kind == DN_SLOT_ARENA && dp->slots[i].first < 0 && i != dp->scratch_slot) dp->slots[i].off = 0;
    lector__free(fl);
    lector__free(by_first);
    lector__free(next);
    lector__free(by_last);
    lector__free(next2);
    top = al64(peak);
    dp->slots[dp->scratch_slot].off = top;
    dp->slots[dp->scratch_slot].size = dp->scratch_size;
    dp->arena_size = top + al64(dp->scratch_size) + 64;
    return 0;
}
