/* oracle_dlopen.c - the loader oracle's helper: copied into a test tree with
 * the host's ld.so and libc, run chrooted there, it asks glibc's own loader
 * for one name and prints what the loader did:
 *   INIT <l_name>   each object mapped before main (preloads, libc, ...)
 *   REQ <l_name>    the object dlopen(NAME, RTLD_NOW) returned
 *   NEW <l_name>    each object that dlopen mapped, in link-map order
 *   ERR <dlerror>   when dlopen failed
 * The loader's own messages (a preload that failed) go to stderr. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static struct link_map *head(void)
{
    struct link_map *lm = NULL;
    void *self = dlopen(NULL, RTLD_NOW);
    if (self && dlinfo(self, RTLD_DI_LINKMAP, &lm) != 0) lm = NULL;
    while (lm && lm->l_prev) lm = lm->l_prev;
    return lm;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: oracle_dlopen NAME\n", stderr);
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0); /* the loader may kill us (SIGBUS) */
    struct link_map *before[512];
    int nb = 0;
    for (struct link_map *l = head(); l && nb < 512; l = l->l_next) {
        before[nb++] = l;
        /* the program itself ("") and the vDSO are not files */
        if (l->l_name[0] && strncmp(l->l_name, "linux-vdso", 10) != 0) printf("INIT %s\n", l->l_name);
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        printf("ERR %s\n", e ? e : "?");
        return 0;
    }
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm) printf("REQ %s\n", lm->l_name);
    for (struct link_map *l = head(); l; l = l->l_next) {
        int old = 0;
        for (int i = 0; i < nb && !old; i++) old = before[i] == l;
        if (!old) printf("NEW %s\n", l->l_name);
    }
    return 0;
}
