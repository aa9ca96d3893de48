/* atomic.c: temp-file-and-rename writes with signal cleanup, as git's lockfile does: a partial
 * file never carries the final name. */
#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LIVE 64
/* Paths the signal handler unlinks; written under the mutex, read in the handler. */
static char *volatile live[MAX_LIVE];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static int handlers_installed;

static void on_signal(int sig) {
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i]) unlink(live[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int register_live(char *path) {
    int slot = -1;
    pthread_mutex_lock(&live_mu);
    if (!handlers_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        handlers_installed = 1;
    }
    for (int i = 0; i < MAX_LIVE && slot < 0; i++)
        if (!live[i]) live[i] = path, slot = i;
    pthread_mutex_unlock(&live_mu);
    return slot;
}

static void unregister_live(int slot) {
    if (slot < 0) return;
    pthread_mutex_lock(&live_mu);
    live[slot] = NULL;
    pthread_mutex_unlock(&live_mu);
}

hc_status hc_atomic_open(hc_atomic_file *af, const char *final_path, hc_err *err) {
    memset(af, 0, sizeof *af);
    af->fd = -1;
    af->slot = -1;
    const char *base = hc_basename(final_path);
    size_t dirlen = (size_t)(base - final_path);
    af->final_path = hc_strdup(final_path);
    af->tmp_path = hc_asprintf("%.*s.%s.tmp-XXXXXX", (int)dirlen, final_path, base);
    if (!af->final_path || !af->tmp_path) {
        hc_atomic_abort(af);
        return hc_fail(err, HC_NOMEM, "out of memory");
    }
    af->fd = mkostemp(af->tmp_path, O_CLOEXEC);
    if (af->fd < 0) {
        hc_status st = hc_fail(err, HC_IO, "cannot create a temporary file beside '%s': %s",
                               final_path, strerror(errno));
        free(af->tmp_path);
        af->tmp_path = NULL;
        hc_atomic_abort(af);
        return st;
    }
    fchmod(af->fd, 0644);
    af->slot = register_live(af->tmp_path);
    return HC_OK;
}

hc_status hc_atomic_commit(hc_atomic_file *af, hc_err *err) {
    hc_status st = HC_OK;
    if (fsync(af->fd) != 0)
        st = hc_fail(err, HC_IO, "cannot sync '%s': %s", af->tmp_path, strerror(errno));
    if (close(af->fd) != 0 && !st)
        st = hc_fail(err, HC_IO, "cannot close '%s': %s", af->tmp_path, strerror(errno));
    af->fd = -1;
    if (!st && rename(af->tmp_path, af->final_path) != 0)
        st = hc_fail(err, HC_IO, "cannot rename '%s' to '%s': %s", af->tmp_path, af->final_path,
                     strerror(errno));
    if (!st) {
        unregister_live(af->slot);
        af->slot = -1;
        free(af->tmp_path);
        af->tmp_path = NULL;
        /* the rename is durable once the folder is synced */
        const char *base = hc_basename(af->final_path);
        char *dir = base == af->final_path ? hc_strdup(".")
                                           : strndup(af->final_path,
                                                     (size_t)(base - af->final_path));
        int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (dfd >= 0) {
            if (fsync(dfd) != 0 && errno != EINVAL)
                st = hc_fail(err, HC_IO, "cannot sync folder '%s': %s", dir, strerror(errno));
            close(dfd);
        }
        free(dir);
    }
    hc_atomic_abort(af);
    return st;
}

void hc_atomic_abort(hc_atomic_file *af) {
    if (af->fd >= 0) close(af->fd);
    af->fd = -1;
    unregister_live(af->slot);
    af->slot = -1;
    if (af->tmp_path) unlink(af->tmp_path);
    free(af->tmp_path);
    af->tmp_path = NULL;
    free(af->final_path);
    af->final_path = NULL;
}

hc_status hc_atomic_copy(const char *src, const char *final_path, hc_err *err) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return hc_fail(err, HC_IO, "cannot open '%s': %s", src, strerror(errno));
    hc_atomic_file af;
    hc_status st = hc_atomic_open(&af, final_path, err);
    if (st) {
        close(in);
        return st;
    }
    char buf[1 << 16];
    uint64_t off = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = hc_fail(err, HC_IO, "cannot read '%s': %s", src, strerror(errno));
            break;
        }
        if (r == 0) break;
        st = hc_pwrite_full(af.fd, buf, (size_t)r, off, af.tmp_path, err);
        if (st) break;
        off += (uint64_t)r;
    }
    close(in);
    if (!st) return hc_atomic_commit(&af, err);
    hc_atomic_abort(&af);
    return st;
}
