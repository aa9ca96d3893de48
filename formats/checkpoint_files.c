/* checkpoint_files.c: which files of a checkpoint folder are read or copied, and that each is
 * what it seems: links resolve inside the folder (or its Hugging Face cache's blobs), files are
 * regular (a FIFO never blocks an open), and each side file's identity is kept so that a copy
 * can refuse a file swapped in after the check. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_int.h"

static bool is_weight_file(const char *n) {
    static const char *const ext[] = {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf",
                                      ".h5", ".msgpack", ".onnx", ".hconvert", ".pkl"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (hc__ends_with(n, ext[i])) return true;
    return strcmp(n, INDEX_NAME) == 0;
}

/* Files hconvert reads (rather than copies): one of them that is not a regular file makes
 * the checkpoint unreadable. */
static bool is_read_file(const char *n) {
    return hc__ends_with(n, ".safetensors") || !strcmp(n, INDEX_NAME) || !strcmp(n, "config.json") ||
           !strcmp(n, "quantize_config.json") || !strcmp(n, "quant_config.json");
}

/* p lies below the folder dir (both canonical). */
static bool is_below(const char *dir, const char *p) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return p[0] == '/' && p[1];
    return strncmp(p, dir, n) == 0 && p[n] == '/';
}

/* A link in the checkpoint folder must resolve below the folder: one that leaves it would
 * read, and convert would copy into OUT, a file from elsewhere. */
static hc_status check_link(const hc_ckpt *c, const char *path, hc_err *err) {
    char target[PATH_MAX], pesc[512], tesc[512], resc[512], fesc[512];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) return hc__fail(err, HC_IO, "cannot read link '%s': %s", path, strerror(errno));
    target[n] = 0;
    char *real = realpath(path, NULL);
    hc_status st = HC_OK;
    if (!real)
        st = hc__fail(err, HC_INVALID, "link '%s' points to '%s', which cannot be resolved: %s",
                     hc__escape(path, pesc, sizeof pesc), hc__escape(target, tesc, sizeof tesc),
                     strerror(errno));
    else if (!is_below(c->root_real, real) && !(c->cache_blobs && is_below(c->cache_blobs, real)))
        st = hc__fail(err, HC_INVALID, "link '%s' points to '%s' ('%s'), outside the checkpoint "
                     "folder '%s'; links must stay inside it (copy the files in, e.g. cp -rL)",
                     hc__escape(path, pesc, sizeof pesc), hc__escape(target, tesc, sizeof tesc),
                     hc__escape(real, resc, sizeof resc),
                     hc__escape(c->root_real, fesc, sizeof fesc));
    free(real);
    return st;
}

/* What path leads to (links followed) must be a regular file, so that a FIFO or a device
 * never blocks an open; hc__open_regular names what it is instead, without blocking. */
static hc_status check_regular(const char *path, hc_err *err) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) return HC_OK;
    int fd;
    HC_TRY(hc__open_regular(path, &fd, NULL, err));
    close(fd); /* it became a regular file meanwhile */
    return HC_OK;
}

/* Checks root/name before it is read: a link must stay inside the checkpoint folder (when
 * there is one), the file must be regular. HC_NOTFOUND when nothing has that name. */
hc_status hc__ck_check_member(const hc_ckpt *c, const char *name, hc_err *err) {
    char *path = hc__asprintf("%s/%s", c->root, name);
    if (!path) return hc__fail(err, HC_NOMEM, "out of memory");
    struct stat sb;
    hc_status st = HC_OK;
    if (lstat(path, &sb) != 0)
        st = hc__fail(err, errno == ENOENT ? HC_NOTFOUND : HC_IO, "cannot open '%s': %s", path,
                     strerror(errno));
    else if (S_ISLNK(sb.st_mode) && c->root_real)
        st = check_link(c, path, err);
    if (!st) st = check_regular(path, err);
    free(path);
    return st;
}

/* A file hconvert reads that is not usable is an error; a side file is left out with a
 * warning (copying a FIFO, or a link to nothing, has no meaning). */
static hc_status leave_out(hc_ckpt *c, const char *name, const hc_err *e, hc_err *err) {
    if (is_read_file(name)) return hc__fail(err, e->code, "%s", e->msg);
    hc__ck_warn(c, "%s: left out of the checkpoint (not read, not copied)", e->msg);
    return HC_OK;
}

/* Whether the entry path of the checkpoint folder is listed: folders (and links to folders)
 * are not; links must stay inside the folder; a dangling link or a file that is not regular
 * is an error when hconvert reads it and is otherwise left out with a warning. */
static hc_status list_entry(hc_ckpt *c, const char *name, const char *path, bool *listed,
                            hc_err *err) {
    struct stat sb;
    hc_err e = {0};
    *listed = false;
    if (lstat(path, &sb) != 0) return HC_OK; /* gone since readdir */
    if (S_ISLNK(sb.st_mode)) {
        bool dangling = stat(path, &sb) != 0;
        if (!dangling && S_ISDIR(sb.st_mode)) return HC_OK;
        if (dangling && check_link(c, path, &e)) return leave_out(c, name, &e, err);
        HC_TRY(check_link(c, path, err));
    }
    if (S_ISDIR(sb.st_mode)) return HC_OK;
    if (check_regular(path, &e)) return leave_out(c, name, &e, err);
    *listed = true;
    return HC_OK;
}

/* Lists the files of the checkpoint folder (not hidden), sorted (see list_entry). */
hc_status hc__ck_list_dir(hc_ckpt *c, char ***names, size_t *count, hc_err *err) {
    const char *dir = c->root;
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return hc__fail(err, HC_IO, "cannot open folder '%s': %s", dir, strerror(errno));
    hc_status st = HC_OK;
    struct dirent *de;
    char **v = NULL;
    size_t n = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = hc__asprintf("%s/%s", dir, de->d_name);
        bool listed = false;
        st = p ? list_entry(c, de->d_name, p, &listed, err)
               : hc__fail(err, HC_NOMEM, "out of memory");
        free(p);
        if (st) break;
        if (!listed) continue;
        char **nv = realloc(v, (n + 1) * sizeof *nv);
        char *dup = hc__strdup(de->d_name);
        if (!nv || !dup) {
            free(dup);
            if (nv) v = nv;
            st = hc__fail(err, HC_NOMEM, "out of memory");
            break;
        }
        v = nv;
        v[n++] = dup;
    }
    closedir(d);
    if (v) qsort(v, n, sizeof *v, hc__cmp_name);
    *names = v;
    *count = n;
    return st;
}

/* The canonical path of the checkpoint folder, that links are checked against; for a
 * snapshot of the Hugging Face cache (HUB/models--ORG--NAME/snapshots/REV, whose files link to
 * ../../blobs/HASH) also that repository's blobs folder. */
hc_status hc__ck_set_root_real(hc_ckpt *c, hc_err *err) {
    free(c->root_real);
    free(c->cache_blobs);
    c->cache_blobs = NULL;
    c->root_real = realpath(c->root, NULL);
    if (!c->root_real)
        return hc__fail(err, HC_IO, "cannot resolve '%s': %s", c->root, strerror(errno));
    const char *rev = strrchr(c->root_real, '/');
    size_t up = rev ? (size_t)(rev - c->root_real) : 0; /* the folder holding REV */
    if (up >= 10 && !strncmp(c->root_real + up - 10, "/snapshots", 10)) {
        char *blobs = hc__asprintf("%.*s/blobs", (int)(up - 10), c->root_real);
        c->cache_blobs = blobs ? realpath(blobs, NULL) : NULL;
        free(blobs);
    }
    return HC_OK;
}

/* Keeps the folder's files that are not weights (names are taken over) as side files, with the
 * identity of the file each resolves to now. */
hc_status hc__ck_keep_side_files(hc_ckpt *c, char **names, size_t n, hc_err *err) {
    for (size_t i = 0; i < n; i++) {
        if (is_weight_file(names[i])) continue;
        char **files = realloc(c->extra_files, (c->nextra + 1) * sizeof *files);
        if (files) c->extra_files = files;
        hc_file_id *ids = realloc(c->extra_ids, (c->nextra + 1) * sizeof *ids);
        if (ids) c->extra_ids = ids;
        if (!files || !ids) return hc__fail(err, HC_NOMEM, "out of memory");
        char *path = hc__asprintf("%s/%s", c->root, names[i]);
        struct stat sb;
        if (!path || stat(path, &sb) != 0) {
            hc_status st = path ? hc__fail(err, HC_IO, "cannot stat '%s': %s", path, strerror(errno))
                                : hc__fail(err, HC_NOMEM, "out of memory");
            free(path);
            return st;
        }
        free(path);
        ids[c->nextra] = (hc_file_id){(uint64_t)sb.st_dev, (uint64_t)sb.st_ino};
        files[c->nextra++] = names[i];
        names[i] = NULL;
    }
    return HC_OK;
}
