/* atomic.c: temp-file-and-rename writes with signal cleanup, as git's lockfile does: a partial
 * file never carries the final name. Convert's OUT (docs/convert.md) adds a set renamed
 * together with the container last, a lock on OUT, the removal of what a killed run left, and
 * a sparse, bounded copy of side files. */
#include "atomic.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Paths the signal handler unlinks: copies in static slots (never freed, so the handler
 * cannot read memory another thread just released), each marked in use after its path is
 * written and cleared before the slot is reused; slots are taken under the mutex. A file that
 * finds no free slot (or whose path does not fit) is not removed on a signal; the next convert
 * into OUT removes it. */
#define MAX_LIVE 1024
#define LIVE_PATH 4096
static char live_path[MAX_LIVE][LIVE_PATH];
static volatile sig_atomic_t live_on[MAX_LIVE];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static int handlers_installed;

static void on_signal(int sig) {
    for (int i = 0; i < MAX_LIVE; i++)
        if (live_on[i]) unlink(live_path[i]);
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
    size_t n = strlen(path);
    for (int i = 0; i < MAX_LIVE && slot < 0 && n < LIVE_PATH; i++)
        if (!live_on[i]) {
            memcpy(live_path[i], path, n + 1);
            __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the path before the mark */
            live_on[i] = 1, slot = i;
        }
    pthread_mutex_unlock(&live_mu);
    return slot;
}

static void unregister_live(int slot) {
    if (slot < 0) return;
    pthread_mutex_lock(&live_mu);
    live_on[slot] = 0;
    pthread_mutex_unlock(&live_mu);
}

static hc_status open_marked(hc_atomic_file *af, const char *final_path, const char *mark,
                             hc_err *err) {
    memset(af, 0, sizeof *af);
    af->fd = -1;
    af->slot = -1;
    const char *base = hc__basename(final_path);
    size_t dirlen = (size_t)(base - final_path);
    af->final_path = hc__strdup(final_path);
    af->tmp_path = hc__asprintf("%.*s.%s%sXXXXXX", (int)dirlen, final_path, base, mark);
    if (!af->final_path || !af->tmp_path) {
        hc__atomic_abort(af);
        return hc__fail(err, HC_NOMEM, "out of memory");
    }
    af->fd = mkostemp(af->tmp_path, O_CLOEXEC);
    if (af->fd < 0) {
        hc_status st = hc__fail(err, HC_IO, "cannot create a temporary file beside '%s': %s",
                               final_path, strerror(errno));
        free(af->tmp_path);
        af->tmp_path = NULL;
        hc__atomic_abort(af);
        return st;
    }
    fchmod(af->fd, 0644);
    af->slot = register_live(af->tmp_path);
    return HC_OK;
}

hc_status hc__atomic_open(hc_atomic_file *af, const char *final_path, hc_err *err) {
    return open_marked(af, final_path, ".tmp-", err);
}

hc_status hc__out_open(hc_atomic_file *af, const char *final_path, hc_fault *fault, hc_err *err) {
    hc_status st = open_marked(af, final_path, HC_OUT_TMP_MARK, err);
    if (!st) af->fault = fault;
    return st;
}

hc_status hc__atomic_write(hc_atomic_file *af, const void *buf, size_t n, uint64_t off,
                          hc_err *err) {
    if (af->fault &&
        __atomic_add_fetch(&af->fault->writes, 1, __ATOMIC_RELAXED) == af->fault->fail_at)
        return hc__fail(err, HC_IO, "cannot write '%s' at offset %llu: %s (injected fault)",
                       af->final_path, (unsigned long long)off, strerror(ENOSPC));
    return hc__pwrite_full(af->fd, buf, n, off, af->final_path, err);
}

/* fsync and close; the file stays under its temporary name. */
static hc_status sync_close(hc_atomic_file *af, hc_err *err) {
    hc_status st = HC_OK;
    if (fsync(af->fd) != 0)
        st = hc__fail(err, HC_IO, "cannot sync '%s': %s", af->tmp_path, strerror(errno));
    if (close(af->fd) != 0 && !st)
        st = hc__fail(err, HC_IO, "cannot close '%s': %s", af->tmp_path, strerror(errno));
    af->fd = -1;
    return st;
}

/* A rename is durable once its folder is synced. */
static hc_status sync_folder_of(const char *path, hc_err *err) {
    const char *base = hc__basename(path);
    char *dir = base == path ? hc__strdup(".") : strndup(path, (size_t)(base - path));
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    hc_status st = HC_OK;
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL)
            st = hc__fail(err, HC_IO, "cannot sync folder '%s': %s", dir, strerror(errno));
        close(dfd);
    }
    free(dir);
    return st;
}

static hc_status rename_tmp(const char *tmp, const char *final, hc_err *err) {
    if (rename(tmp, final) == 0) return HC_OK;
    return hc__fail(err, HC_IO, "cannot rename '%s' to '%s': %s", tmp, final, strerror(errno));
}

hc_status hc__atomic_commit(hc_atomic_file *af, hc_err *err) {
    hc_status st = sync_close(af, err);
    if (!st) st = rename_tmp(af->tmp_path, af->final_path, err);
    if (!st) {
        unregister_live(af->slot);
        af->slot = -1;
        free(af->tmp_path);
        af->tmp_path = NULL;
        st = sync_folder_of(af->final_path, err);
    }
    hc__atomic_abort(af);
    return st;
}

void hc__atomic_abort(hc_atomic_file *af) {
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

/* The data region at or after pos, [*b, *e) within size; *b == size when only a hole is left.
 * Where the filesystem cannot say, everything from pos is data. */
static hc_status data_region(int fd, uint64_t pos, uint64_t size, uint64_t *b, uint64_t *e,
                             const char *path, hc_err *err) {
    off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
    if (d < 0 && errno == ENXIO) d = (off_t)size;
    if (d < 0 && errno == EINVAL) d = (off_t)pos;
    if (d < 0) return hc__fail(err, HC_IO, "cannot seek in '%s': %s", path, strerror(errno));
    off_t h = (uint64_t)d < size ? lseek(fd, d, SEEK_HOLE) : d;
    if (h < 0 && errno != EINVAL)
        return hc__fail(err, HC_IO, "cannot seek in '%s': %s", path, strerror(errno));
    *b = (uint64_t)d < size ? (uint64_t)d : size;
    *e = h > d && (uint64_t)h < size ? (uint64_t)h : size; /* always past *b unless at size */
    return HC_OK;
}

static bool all_zero(const unsigned char *p, size_t n) {
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

#define COPY_BLOCK (1u << 16)

hc_status hc__atomic_copy(hc_atomic_file *af, const char *src, uint64_t max_size,
                         const hc_file_id *expect, hc_err *err) {
    int in;
    uint64_t size;
    HC_TRY(hc__open_regular(src, &in, &size, err));
    hc_status st = HC_OK;
    unsigned char *buf = NULL;
    struct stat sb;
    if (expect && (fstat(in, &sb) != 0 || (uint64_t)sb.st_dev != expect->dev ||
                   (uint64_t)sb.st_ino != expect->ino)) {
        st = hc__fail(err, HC_INVALID, "side file '%s' changed after the checkpoint was checked "
                     "(another file, or a link to one, is there now); nothing is copied", src);
        goto out;
    }
    if (size > max_size) {
        st = hc__fail(err, HC_INVALID, "side file '%s' is %llu bytes, more than the %llu allowed "
                     "for a file copied beside the container", src, (unsigned long long)size,
                     (unsigned long long)max_size);
        goto out;
    }
    buf = malloc(COPY_BLOCK);
    if (!buf) {
        st = hc__fail(err, HC_NOMEM, "out of memory copying '%s'", src);
        goto out;
    }
    for (uint64_t pos = 0, b = 0, e = 0; pos < size && !st; pos = e) {
        st = data_region(in, pos, size, &b, &e, src, err);
        for (uint64_t o = b, n; o < e && !st; o += n) {
            n = e - o < COPY_BLOCK ? e - o : COPY_BLOCK;
            st = hc__pread_full(in, buf, (size_t)n, o, src, err);
            if (!st && !all_zero(buf, (size_t)n)) st = hc__atomic_write(af, buf, (size_t)n, o, err);
        }
    }
    if (!st && ftruncate(af->fd, (off_t)size) != 0)
        st = hc__fail(err, HC_IO, "cannot size '%s' to %llu bytes: %s", af->final_path,
                     (unsigned long long)size, strerror(errno));
out:
    free(buf);
    close(in);
    return st;
}

hc_status hc__atomic_set_add(hc_atomic_set *s, hc_atomic_file *af, bool last, hc_err *err) {
    hc_status st = HC_OK;
    struct stat sb;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        hc_atomic_entry *v = cap > s->cap && cap <= SIZE_MAX / sizeof *v
                                 ? realloc(s->v, cap * sizeof *v) : NULL;
        if (!v) st = hc__fail(err, HC_NOMEM, "out of memory");
        else s->v = v, s->cap = cap;
    }
    if (!st && fstat(af->fd, &sb) != 0)
        st = hc__fail(err, HC_IO, "cannot stat '%s': %s", af->tmp_path, strerror(errno));
    if (!st) st = sync_close(af, err);
    if (st) {
        hc__atomic_abort(af);
        return st;
    }
    s->v[s->n++] = (hc_atomic_entry){af->tmp_path, af->final_path, af->slot, last, false,
                                     (uint64_t)sb.st_size};
    af->tmp_path = af->final_path = NULL;
    af->slot = -1;
    return HC_OK;
}

hc_status hc__atomic_set_commit(hc_atomic_set *s, hc_err *err) {
    hc_status st = HC_OK;
    /* 1. old containers go first: until step 3 ends, no folder claims to be complete */
    for (size_t i = 0; i < s->n && !st; i++)
        if (s->v[i].last && unlink(s->v[i].final_path) != 0 && errno != ENOENT)
            st = hc__fail(err, HC_IO, "cannot remove '%s': %s", s->v[i].final_path,
                         strerror(errno));
    /* 2. side files, their folders synced (a power loss must not keep a container whose side
     * files' renames were lost), 3. containers */
    for (int pass = 0; pass < 2 && !st; pass++) {
        for (size_t i = 0; i < s->n && !st; i++) {
            hc_atomic_entry *e = &s->v[i];
            if (e->last != (pass == 1)) continue;
            st = rename_tmp(e->tmp_path, e->final_path, err);
            e->renamed = !st;
        }
        for (size_t i = 0; i < s->n && !st && pass == 0; i++)
            if (s->v[i].last) st = sync_folder_of(s->v[i].final_path, err);
    }
    for (size_t i = 0; i < s->n && !st; i++)
        if (s->v[i].last) st = sync_folder_of(s->v[i].final_path, err);
    for (size_t i = 0; i < s->n && st; i++)
        if (s->v[i].renamed) unlink(s->v[i].final_path);
    hc__atomic_set_abort(s);
    return st;
}

void hc__atomic_set_abort(hc_atomic_set *s) {
    for (size_t i = 0; i < s->n; i++) {
        hc_atomic_entry *e = &s->v[i];
        unregister_live(e->slot);
        if (!e->renamed) unlink(e->tmp_path);
        free(e->tmp_path);
        free(e->final_path);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

hc_status hc__out_lock(const char *dir, int *fd, hc_err *err) {
    *fd = -1;
    char *path = hc__asprintf("%s/%s", dir, HC_OUT_LOCK_FILE);
    if (!path) return hc__fail(err, HC_NOMEM, "out of memory");
    hc_status st = HC_OK;
    struct stat sb;
    /* read-only (flock needs no write access) and 0666 less the umask: another user who may
     * write OUT may take the lock too */
    int f = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
    if (f < 0)
        st = hc__fail(err, HC_IO, "cannot open lock file '%s': %s", path, strerror(errno));
    else if (fstat(f, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = hc__fail(err, HC_IO, "lock file '%s' is not a regular file", path);
    else if (flock(f, LOCK_EX | LOCK_NB) != 0)
        st = errno == EWOULDBLOCK
                 ? hc__fail(err, HC_IO, "output folder '%s' is in use: another convert holds its "
                           "lock '%s'", dir, path)
                 : hc__fail(err, HC_IO, "cannot lock '%s': %s", path, strerror(errno));
    if (st && f >= 0) close(f);
    else *fd = f;
    free(path);
    return st;
}

void hc__out_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing the last descriptor releases the flock */
}

static bool mkstemp_suffix(const char *s) {
    for (int i = 0; i < 6; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return s[6] == 0;
}

bool hc__out_is_tmp_name(const char *name) {
    static const char legacy[] = "." HC_CONTAINER_FILE ".tmp-";
    size_t n = strlen(name), m = strlen(HC_OUT_TMP_MARK);
    if (name[0] != '.' || n < 6 || !mkstemp_suffix(name + n - 6)) return false;
    if (n == sizeof legacy - 1 + 6 && memcmp(name, legacy, sizeof legacy - 1) == 0) return true;
    return n >= 2 + m + 6 && memcmp(name + n - 6 - m, HC_OUT_TMP_MARK, m) == 0;
}

/* Whether name is a rank folder's: "rank" and 1 to 5 digits. */
static bool rank_name(const char *name) {
    if (strncmp(name, "rank", 4) != 0) return false;
    size_t k = 0;
    while (name[4 + k] >= '0' && name[4 + k] <= '9') k++;
    return k >= 1 && k <= 5 && name[4 + k] == 0;
}

/* Removes our temporary files from one folder; with ranks, descends into rank<N> folders. */
static hc_status clean_folder(const char *dir, bool ranks, size_t *removed, hc_err *err) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        hc_status st = hc__fail(err, HC_IO, "cannot open folder '%s': %s", dir, strerror(errno));
        if (dfd >= 0) close(dfd);
        return st;
    }
    hc_status st = HC_OK;
    struct dirent *de;
    while (!st && (de = readdir(d))) {
        struct stat sb;
        if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISREG(sb.st_mode) && hc__out_is_tmp_name(de->d_name)) {
            if (unlinkat(dfd, de->d_name, 0) == 0) (*removed)++;
            else if (errno != ENOENT)
                st = hc__fail(err, HC_IO, "cannot remove the stale temporary file '%s/%s': %s",
                             dir, de->d_name, strerror(errno));
        } else if (ranks && S_ISDIR(sb.st_mode) && rank_name(de->d_name)) {
            /* a rank folder may be another convert's OUT of its own: skip it while that one
             * holds its lock, and hold the lock while cleaning it */
            char *sub = hc__asprintf("%s/%s", dir, de->d_name);
            char *lk = sub ? hc__asprintf("%s/%s", sub, HC_OUT_LOCK_FILE) : NULL;
            int lfd = lk ? open(lk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) : -1;
            bool busy = lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) != 0;
            if (!sub || !lk) st = hc__fail(err, HC_NOMEM, "out of memory");
            else if (!busy) st = clean_folder(sub, false, removed, err);
            if (lfd >= 0) close(lfd);
            free(lk);
            free(sub);
        }
    }
    closedir(d);
    return st;
}

hc_status hc__out_clean_stale(const char *dir, size_t *removed, hc_err *err) {
    *removed = 0;
    return clean_folder(dir, true, removed, err);
}

static hc_status drop_container(const char *dir, const char *sub, size_t *removed, hc_err *err) {
    char *p = sub ? hc__asprintf("%s/%s/%s", dir, sub, HC_CONTAINER_FILE)
                  : hc__asprintf("%s/%s", dir, HC_CONTAINER_FILE);
    if (!p) return hc__fail(err, HC_NOMEM, "out of memory");
    hc_status st = HC_OK;
    if (unlink(p) == 0) (*removed)++;
    else if (errno != ENOENT && errno != ENOTDIR)
        st = hc__fail(err, HC_IO, "cannot remove the earlier run's '%s': %s", p, strerror(errno));
    free(p);
    return st;
}

hc_status hc__out_drop_other_ranks(const char *dir, unsigned tp, size_t *removed, hc_err *err) {
    *removed = 0;
    if (tp > 1) HC_TRY(drop_container(dir, NULL, removed, err));
    DIR *d = opendir(dir);
    if (!d) return hc__fail(err, HC_IO, "cannot open folder '%s': %s", dir, strerror(errno));
    hc_status st = HC_OK;
    struct dirent *de;
    while (!st && (de = readdir(d)))
        if (rank_name(de->d_name) && (tp == 1 || strtoul(de->d_name + 4, NULL, 10) >= tp))
            st = drop_container(dir, de->d_name, removed, err);
    closedir(d);
    return st;
}
