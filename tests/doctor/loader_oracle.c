/* loader_oracle.c - glibc's own loader as the oracle of the emulation:
 * run a dlopen inside a tree (chroot, as an unprivileged user when we are
 * root) and compare what it did with what gpuenv_ldso_dlopen predicts for the
 * same tree and environment (see loader_oracle.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"
#include "loader_oracle.h"
#include "util/util.h"

#define NOBODY 65534

static char *read_fd(int fd)
{
    gpuenv_buf b = {0};
    char chunk[4096];
    ssize_t n;
    gpuenv_buf_puts(&b, "");
    while ((n = read(fd, chunk, sizeof chunk)) > 0) gpuenv_buf_putn(&b, chunk, (size_t)n);
    return gpuenv_buf_take(&b);
}

static int drop_privileges(void) { return setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ? -1 : 0; }

/* Write a file in /proc/self (user-namespace maps). */
static int write_proc(const char *file, const char *text)
{
    int fd = open(file, O_WRONLY);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Can this process chroot? Root can; others try a user namespace. */
int oracle_chroot_mode(char *why, size_t len)
{
    if (geteuid() == 0) return 1;
    pid_t p = fork();
    if (p == 0) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        char map[64];
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) _exit(1);
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        write_proc("/proc/self/setgroups", "deny");
        if (write_proc("/proc/self/uid_map", map)) _exit(1);
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        if (write_proc("/proc/self/gid_map", map)) _exit(1);
        _exit(chroot("/") ? 1 : 0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 2;
    snprintf(why, len, "not root and no user namespaces (unshare -r fails here), so no chroot");
    return 0;
}

/* glibc's answer: run tree/oracle/oracle_dlopen chrooted. */
char *oracle_run_real(const oracle_case *k, int mode, int unpriv)
{
    int out[2];
    if (pipe(out)) return NULL;
    pid_t p = fork();
    if (p == 0) {
        close(out[0]);
        dup2(out[1], 1);
        dup2(out[1], 2);
        if (mode == 2) {
            uid_t uid = getuid();
            gid_t gid = getgid();
            char map[64];
            if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) _exit(120);
            write_proc("/proc/self/setgroups", "deny");
            snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
            write_proc("/proc/self/uid_map", map);
            snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
            write_proc("/proc/self/gid_map", map);
        }
        if (chroot(k->tree) || chdir("/")) _exit(121);
        if (unpriv && drop_privileges()) _exit(122);
        char llp[8192], pre[8192];
        char *envp[4];
        int ne = 0;
        if (strcmp(k->llp, "-")) {
            snprintf(llp, sizeof llp, "LD_LIBRARY_PATH=%s", k->llp);
            envp[ne++] = llp;
        }
        if (strcmp(k->preload, "-")) {
            snprintf(pre, sizeof pre, "LD_PRELOAD=%s", k->preload);
            envp[ne++] = pre;
        }
        envp[ne] = NULL;
        char helper[] = "/oracle/oracle_dlopen", name[4096];
        snprintf(name, sizeof name, "%s", k->name);
        char *argv[] = {helper, name, NULL};
        execve(argv[0], argv, envp);
        _exit(123);
    }
    close(out[1]);
    char *text = read_fd(out[0]);
    close(out[0]);
    int st = 0;
    waitpid(p, &st, 0);
    if (!text) return NULL;
    char *res;
    if (WIFSIGNALED(st))
        res = gpuenv_asprintf("%sCRASH %s\n", text, strsignal(WTERMSIG(st)));
    else if (WEXITSTATUS(st) >= 120)
        res = gpuenv_asprintf("%sSETUP-FAILED %d\n", text, WEXITSTATUS(st));
    else
        return text;
    lector__free(text);
    return res;
}

/* The emulation's answer in the helper's format. */
static char *emulate(const oracle_case *k)
{
    gpuenv_ldso L;
    if (gpuenv_ldso_init(&L, k->tree, strcmp(k->llp, "-") ? k->llp : "", strcmp(k->preload, "-") ? k->preload : ""))
        return NULL;
    gpuenv_load ld;
    if (gpuenv_ldso_dlopen(&L, k->name, &ld)) {
        gpuenv_ldso_free(&L);
        return NULL;
    }
    gpuenv_buf b = {0};
    gpuenv_buf_puts(&b, "");
    for (size_t i = 0; i < ld.preload_errors.n; i++) gpuenv_buf_printf(&b, "%s\n", ld.preload_errors.v[i]);
    for (size_t i = 0; i < ld.n_startup; i++)
        if (!ld.obj[i]->assumed) gpuenv_buf_printf(&b, "INIT %s\n", ld.obj[i]->path);
    if (ld.crash_signal) {
        gpuenv_buf_printf(&b, "CRASH %s\n", strsignal(ld.crash_signal));
    } else if (!ld.ok) {
        gpuenv_buf_printf(&b, "ERR %s\n", ld.error ? ld.error : "?");
    } else {
        gpuenv_buf_printf(&b, "REQ %s\n", ld.obj[ld.first_requested]->path);
        for (size_t i = ld.n_startup; i < ld.n; i++) gpuenv_buf_printf(&b, "NEW %s\n", ld.obj[i]->path);
    }
    gpuenv_load_free(&ld);
    gpuenv_ldso_free(&L);
    return gpuenv_buf_take(&b);
}

/* The emulation runs as the same user as the loader it is compared with. */
char *oracle_emulate_as(const oracle_case *k, int unpriv)
{
    if (!unpriv) return emulate(k);
    int out[2];
    if (pipe(out)) return NULL;
    pid_t p = fork();
    if (p == 0) {
        close(out[0]);
        if (drop_privileges()) _exit(1);
        char *s = emulate(k);
        if (s && write(out[1], s, strlen(s)) < 0) _exit(1);
        _exit(s ? 0 : 1);
    }
    close(out[1]);
    char *text = read_fd(out[0]);
    close(out[0]);
    waitpid(p, NULL, 0);
    return text;
}

/* Compare: the lines that are not INIT must be equal in order (preload
 * messages, REQ/ERR/CRASH, NEW); every INIT line of the emulation (a
 * preload or what it needs) must be among glibc's INIT lines. */
int oracle_agree(const char *real, const char *emu)
{
    gpuenv_strv r = {0}, e = {0}, rm = {0}, em = {0};
    gpuenv_strv_split(&r, real, "\n");
    gpuenv_strv_split(&e, emu, "\n");
    int ok = 1;
    for (size_t i = 0; i < r.n; i++)
        if (r.v[i][0] && strncmp(r.v[i], "INIT ", 5)) gpuenv_strv_push(&rm, r.v[i]);
    for (size_t i = 0; i < e.n; i++) {
        if (!e.v[i][0]) continue;
        if (strncmp(e.v[i], "INIT ", 5) == 0)
            ok &= gpuenv_strv_has(&r, e.v[i]);
        else
            gpuenv_strv_push(&em, e.v[i]);
    }
    ok &= rm.n == em.n;
    for (size_t i = 0; ok && i < rm.n; i++) ok &= strcmp(rm.v[i], em.v[i]) == 0;
    gpuenv_strv_free(&r);
    gpuenv_strv_free(&e);
    gpuenv_strv_free(&rm);
    gpuenv_strv_free(&em);
    return ok;
}
