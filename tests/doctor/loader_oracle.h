/* loader_oracle.h - glibc's loader as an oracle (loader_oracle.c).
 *
 * A case is a tree (with /oracle/oracle_dlopen, the host's ld.so and libc
 * in it), the environment a program there starts with, and a name to
 * dlopen. Both answers come as lines: INIT <l_name> (mapped before main),
 * REQ <l_name> (what dlopen returned) and NEW <l_name> (what it mapped), or
 * ERR <dlerror()>, or CRASH <signal>; plus the loader's preload messages. */
#ifndef LECTOR_TESTS_LOADER_ORACLE_H
#define LECTOR_TESTS_LOADER_ORACLE_H

typedef struct oracle_case {
    const char *id, *tree;
    const char *llp, *preload; /* "-": unset */
    const char *name;
    const char *flags; /* "unpriv": run both as an unprivileged user */
    const char *what;
} oracle_case;

/* 1 root (chroot), 2 a user namespace, 0 neither (why says it). */
int oracle_chroot_mode(char *why, size_t len);
/* glibc's answer, run chrooted in the tree; lector__free() it. */
char *oracle_run_real(const oracle_case *k, int mode, int unpriv);
/* The emulation's answer (as the unprivileged user when unpriv). */
char *oracle_emulate_as(const oracle_case *k, int unpriv);
/* 1 when both answers agree. */
int oracle_agree(const char *real, const char *emu);

#endif
