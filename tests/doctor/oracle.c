/* oracle.c - the loader oracle: for every case of a cases file, glibc's own
 * loader is run inside the case's tree (chroot, as an unprivileged user when
 * we are root) and asked for one name with dlopen; the discovery layer's
 * emulation (gpuenv_ldso_dlopen) is asked the same question about the same
 * tree from outside. Both answers are compared: the object dlopen returns
 * (its l_name) or its error text word for word, every object it maps in
 * order, the preloads, and the loader's preload messages.
 *
 *   doctor_oracle CASES_FILE [CASE_ID...]
 *
 * A cases file line (tab separated, "-" for unset):
 *   id  tree  LD_LIBRARY_PATH  LD_PRELOAD  name  flags  what-it-shows
 * flags: "unpriv" needs a non-root user (permission cases), "-" none.
 * Exit: 0 all agree, 1 a disagreement, 77 skipped (no way to chroot). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"
#include "loader_oracle.h"
#include "util/util.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: doctor_oracle CASES_FILE [CASE_ID...]\n", stderr);
        return 2;
    }
    char why[256] = "";
    int mode = oracle_chroot_mode(why, sizeof why);
    if (!mode) {
        printf("skipped: %s\n", why);
        return 77;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    char line[16384];
    int n = 0, bad = 0, skipped = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        gpuenv_strv col = {0};
        gpuenv_strv_split(&col, line, "\t");
        if (col.n < 7) {
            fprintf(stderr, "bad cases line: %s\n", line);
            gpuenv_strv_free(&col);
            return 2;
        }
        oracle_case k = {col.v[0], col.v[1], col.v[2], col.v[3], col.v[4], col.v[5], col.v[6]};
        int wanted = argc == 2;
        for (int i = 2; i < argc; i++) wanted |= strcmp(argv[i], k.id) == 0;
        if (!wanted) {
            gpuenv_strv_free(&col);
            continue;
        }
        int unpriv = strstr(k.flags, "unpriv") != NULL;
        if (unpriv && geteuid() != 0) {
            printf("skip %-28s needs root to run as an unprivileged user (%s)\n", k.id, k.what);
            skipped++;
            gpuenv_strv_free(&col);
            continue;
        }
        char *real = oracle_run_real(&k, mode, unpriv);
        char *emu = oracle_emulate_as(&k, unpriv);
        n++;
        if (real && emu && oracle_agree(real, emu)) {
            printf("ok   %-28s %s\n", k.id, k.what);
        } else {
            bad++;
            printf("DIFF %-28s %s\n--- glibc (dlopen in the tree):\n%s--- emulation:\n%s\n", k.id, k.what,
                   real ? real : "(no result)\n", emu ? emu : "(no result)\n");
        }
        lector__free(real);
        lector__free(emu);
        gpuenv_strv_free(&col);
    }
    fclose(f);
    printf("%d cases, %d agree, %d differ, %d skipped (%s)\n", n, n - bad, bad, skipped,
           mode == 1 ? "chroot as root" : "chroot in a user namespace");
    if (!n) return 77;
    return bad ? 1 : 0;
}
