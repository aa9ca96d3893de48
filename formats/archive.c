/* archive.c: extracts a checkpoint archive into a private folder with libarchive. Formats and
 * filters are enabled one by one (never the *_all calls, which may run external programs);
 * entry names are never trusted: absolute paths, '..', links and devices are refused. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"

#define HC_ARCHIVE_MAX_ENTRIES 100000

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

hc_status hc_remove_tree(const char *path) {
    return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) == 0 ? HC_OK : HC_IO;
}

/* Normalises an entry name into out: strips leading "./", refuses absolute paths, '..' and
 * '.' components, backslashes and empty names. Returns false when unsafe. */
static bool safe_entry_name(const char *name, char *out, size_t cap) {
    while (name[0] == '.' && name[1] == '/') name += 2;
    size_t n = strlen(name);
    while (n > 0 && name[n - 1] == '/') n--; /* directories end in '/' */
    if (n == 0 || n >= cap || name[0] == '/' || memchr(name, '\\', n)) return false;
    memcpy(out, name, n);
    out[n] = 0;
    for (char *c = out; *c;) {
        char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += len + (e ? 1 : 0);
    }
    return true;
}

/* Creates every parent folder of rel under dest. */
static hc_status make_parents(const char *dest, const char *rel, const char *archive, hc_err *err) {
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dest, rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return hc_fail(err, HC_INVALID, "'%s': entry name too long", archive);
    for (char *p = path + strlen(dest) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            *p = '/';
            return hc_fail(err, HC_IO, "cannot create '%s': %s", path, strerror(errno));
        }
        *p = '/';
    }
    return HC_OK;
}

static hc_status extract_file(struct archive *a, const char *dest, const char *rel,
                              const char *archive, hc_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dest, rel);
    HC_TRY(make_parents(dest, rel, archive, err));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST)
            return hc_fail(err, HC_INVALID, "'%s': entry '%s' appears twice", archive, rel);
        return hc_fail(err, HC_IO, "cannot create '%s': %s", path, strerror(errno));
    }
    hc_status st = HC_OK;
    const void *buf;
    size_t size;
    la_int64_t off;
    for (;;) {
        int r = archive_read_data_block(a, &buf, &size, &off);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK) {
            st = hc_fail(err, HC_INVALID, "'%s': cannot read entry '%s': %s", archive, rel,
                         archive_error_string(a));
            break;
        }
        st = hc_pwrite_full(fd, buf, size, (uint64_t)off, path, err);
        if (st) break;
    }
    if (close(fd) != 0 && !st) st = hc_fail(err, HC_IO, "cannot write '%s': %s", path, strerror(errno));
    return st;
}

hc_status hc_archive_extract(const char *archive, const char *dest, hc_err *err) {
    hc_status st = HC_OK;
    struct archive *a = archive_read_new();
    if (!a) return hc_fail(err, HC_NOMEM, "out of memory");
    int (*filters[])(struct archive *) = {archive_read_support_filter_gzip,
                                          archive_read_support_filter_zstd,
                                          archive_read_support_filter_xz,
                                          archive_read_support_filter_bzip2,
                                          archive_read_support_filter_lz4};
    const char *fnames[] = {"gzip", "zstd", "xz", "bzip2", "lz4"};
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (filters[i](a) != ARCHIVE_OK) {
            /* ARCHIVE_WARN means libarchive would run an external program: refuse. */
            st = hc_fail(err, HC_UNSUPPORTED, "libarchive lacks built-in %s support", fnames[i]);
            goto out;
        }
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_format_zip(a) != ARCHIVE_OK) {
        st = hc_fail(err, HC_INTERNAL, "libarchive: %s", archive_error_string(a));
        goto out;
    }
    if (archive_read_open_filename(a, archive, 1 << 16) != ARCHIVE_OK) {
        st = hc_fail(err, HC_INVALID, "'%s': not a readable tar or zip archive: %s", archive,
                     archive_error_string(a));
        goto out;
    }
    struct archive_entry *ent;
    size_t count = 0;
    for (;;) {
        int r = archive_read_next_header(a, &ent);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            st = hc_fail(err, HC_INVALID, "'%s': %s archive: %s", archive,
                         count ? "corrupt" : "not a tar or zip", archive_error_string(a));
            goto out;
        }
        if (++count > HC_ARCHIVE_MAX_ENTRIES) {
            st = hc_fail(err, HC_INVALID, "'%s': more than %d entries", archive,
                         HC_ARCHIVE_MAX_ENTRIES);
            goto out;
        }
        const char *name = archive_entry_pathname(ent);
        char rel[1024], esc[1100];
        if (!name || !safe_entry_name(name, rel, sizeof rel)) {
            st = hc_fail(err, HC_INVALID, "'%s': entry '%s' has an unsafe name (absolute, '..' "
                         "or empty components are refused)", archive,
                         name ? hc_escape(name, esc, sizeof esc) : "(none)");
            goto out;
        }
        mode_t type = archive_entry_filetype(ent);
        if (archive_entry_hardlink(ent) || type == AE_IFLNK) {
            st = hc_fail(err, HC_INVALID, "'%s': entry '%s' is a link; links are refused",
                         archive, hc_escape(rel, esc, sizeof esc));
            goto out;
        }
        if (type == AE_IFDIR) continue;
        if (type != AE_IFREG) {
            st = hc_fail(err, HC_INVALID, "'%s': entry '%s' is not a regular file", archive,
                         hc_escape(rel, esc, sizeof esc));
            goto out;
        }
        st = extract_file(a, dest, rel, archive, err);
        if (st) goto out;
    }
    if (count == 0) st = hc_fail(err, HC_INVALID, "'%s': archive is empty", archive);
out:
    archive_read_free(a);
    return st;
}
