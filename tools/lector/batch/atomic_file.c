/* atomic_file.c - see atomic_file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"

char *atomic_file_temp_path(const char *final_path)
{
    const char *slash = strrchr(final_path, '/');
    size_t dir_len = slash ? (size_t)(slash - final_path) + 1 : 0;
    char *t = NULL;
    if (asprintf(&t, "%.*s.%s%s", (int)dir_len, final_path, final_path + dir_len, ATOMIC_FILE_TEMP_SUFFIX) < 0)
        return NULL;
    return t;
}

char *atomic_file_output_path(const char *dir, const char *rel, const char *ext)
{
    char *p = NULL;
    size_t n = strlen(dir);
    if (asprintf(&p, "%s%s%s.%s", dir, n && dir[n - 1] == '/' ? "" : "/", rel, ext) < 0) return NULL;
    return p;
}

/* mkdir -p of the directory holding `path`; concurrent creators are fine. */
static int make_parents(const char *path, char *msg, size_t msg_len)
{
    char *p = strdup(path);
    if (!p) {
        snprintf(msg, msg_len, "%s: out of memory", path);
        return -1;
    }
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        if (mkdir(p, 0777) && errno != EEXIST) {
            snprintf(msg, msg_len, "cannot create directory %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        struct stat st;
        if (stat(p, &st) || !S_ISDIR(st.st_mode)) {
            snprintf(msg, msg_len, "cannot create directory %s: a file of that name exists", p);
            free(p);
            return -1;
        }
        *s = '/';
    }
    free(p);
    return 0;
}

int atomic_file_open(atomic_file *af, const char *final_path, char *msg, size_t msg_len)
{
    memset(af, 0, sizeof *af);
    if (make_parents(final_path, msg, msg_len)) return -1;
    af->final_path = strdup(final_path);
    af->temp_path = atomic_file_temp_path(final_path);
    if (!af->final_path || !af->temp_path) {
        snprintf(msg, msg_len, "%s: out of memory", final_path);
        goto fail;
    }
    int fd = open(af->temp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(msg, msg_len, "cannot write %s: %s", af->temp_path, strerror(errno));
        goto fail;
    }
    if (!(af->f = fdopen(fd, "w"))) {
        snprintf(msg, msg_len, "cannot write %s: %s", af->temp_path, strerror(errno));
        close(fd);
        unlink(af->temp_path);
        goto fail;
    }
    return 0;
fail:
    free(af->final_path);
    free(af->temp_path);
    memset(af, 0, sizeof *af);
    return -1;
}

void atomic_file_abort(atomic_file *af)
{
    if (af->f) fclose(af->f);
    if (af->temp_path) unlink(af->temp_path);
    free(af->final_path);
    free(af->temp_path);
    memset(af, 0, sizeof *af);
}

int atomic_file_commit(atomic_file *af, char *msg, size_t msg_len)
{
    int rc = 0;
    /* Data on disk before the rename: otherwise a power loss could leave the
     * final name pointing at an empty or partial file. */
    if (fflush(af->f) || ferror(af->f) || fsync(fileno(af->f))) {
        snprintf(msg, msg_len, "cannot write %s: %s", af->temp_path, strerror(errno));
        rc = -1;
    }
    if (fclose(af->f) && rc == 0) {
        snprintf(msg, msg_len, "cannot write %s: %s", af->temp_path, strerror(errno));
        rc = -1;
    }
    af->f = NULL;
    if (rc == 0 && rename(af->temp_path, af->final_path)) {
        snprintf(msg, msg_len, "cannot rename %s to %s: %s", af->temp_path, af->final_path, strerror(errno));
        rc = -1;
    }
    if (rc) unlink(af->temp_path);
    free(af->final_path);
    free(af->temp_path);
    memset(af, 0, sizeof *af);
    return rc;
}
