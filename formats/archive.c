/* archive.c: extracts a checkpoint archive into a private folder with libarchive. Formats and
 * filters are enabled one by one (never the *_all calls, which may run external programs);
 * entry names are never trusted: they are normalised ("./a" is "a"), and absolute paths,
 * '..', links and devices are refused. What an archive may write is capped (docs/inputs.md),
 * folders and file entries included, so that a small archive cannot fill the disk or its
 * inodes. */
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
#define HC_ARCHIVE_MAX_NAME 1023 /* bytes of a normalised entry name */
#define HC_ARCHIVE_MAX_DEPTH 32  /* components of a normalised entry name */
#define HC_ARCHIVE_MAX_PART 255  /* bytes of one component (NAME_MAX) */
/* What a folder and a file cost against the limit besides their bytes: a folder takes a
 * block and an inode, a file at least an inode (and its header in the archive is 512 bytes). */
#define HC_ARCHIVE_DIR_COST 4096
#define HC_ARCHIVE_FILE_COST 512
#define STR_(x) #x
#define STR(x) STR_(x)

/* One extraction: the archive, where it goes, and how many bytes it may still write. */
typedef struct {
    struct archive *a;
    const char *archive, *dest;
    uint64_t archive_size, ratio;
    uint64_t limit, used;
    size_t entries; /* entries read and folders created, against HC_ARCHIVE_MAX_ENTRIES */
    bool by_ratio; /* the limit is ratio x archive_size, below the absolute limit */
} extraction;

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

hc_status hc__remove_tree(const char *path) {
    return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) == 0 ? HC_OK : HC_IO;
}

/* Normalises an entry name into out: empty and '.' components are dropped ("./a//b/" is
 * "a/b"; "./" and "." are ""). Returns NULL, or why the name is refused. */
static const char *normalise_name(const char *name, char *out, size_t cap) {
    size_t n = 0;
    int depth = 0;
    if (name[0] == '/') return "absolute names are refused";
    for (const char *c = name; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.') return "'..' components are refused";
        if (memchr(c, '\\', len)) return "backslashes are refused";
        if (len > HC_ARCHIVE_MAX_PART)
            return "a component is longer than " STR(HC_ARCHIVE_MAX_PART) " bytes";
        if (len > 0 && !(len == 1 && c[0] == '.')) {
            if (++depth > HC_ARCHIVE_MAX_DEPTH)
                return "more than " STR(HC_ARCHIVE_MAX_DEPTH) " levels";
            if (n + (n > 0) + len >= cap) return "longer than " STR(HC_ARCHIVE_MAX_NAME) " bytes";
            if (n > 0) out[n++] = '/';
            memcpy(out + n, c, len);
            n += len;
        }
        c += len + (c[len] == '/');
    }
    out[n] = 0;
    return NULL;
}

/* Fails when an entry costing `cost` bytes would take the extraction past its limit. */
static hc_status charge(const extraction *x, const char *rel, uint64_t cost, hc_err *err) {
    if (cost <= x->limit - x->used) return HC_OK;
    char esc[1100], why[160];
    if (x->by_ratio)
        snprintf(why, sizeof why, "%llu times the archive's %llu bytes; raise it with "
                 "--max-extract-ratio R", (unsigned long long)x->ratio,
                 (unsigned long long)x->archive_size);
    else
        snprintf(why, sizeof why, "raise it with --max-extract-bytes N");
    uint64_t total;
    if (!hc__add_u64(x->used, cost, &total)) total = UINT64_MAX;
    return hc__fail(err, HC_INVALID, "'%s': entry '%s' takes the extracted size to %llu bytes or "
                   "more, past the limit of %llu bytes (%s)", x->archive,
                   hc__escape(rel, esc, sizeof esc), (unsigned long long)total,
                   (unsigned long long)x->limit, why);
}

/* Counts an entry of the archive, or a folder it makes, against HC_ARCHIVE_MAX_ENTRIES. */
static hc_status count_entry(extraction *x, hc_err *err) {
    if (++x->entries <= HC_ARCHIVE_MAX_ENTRIES) return HC_OK;
    return hc__fail(err, HC_INVALID, "'%s': more than %d entries (folders included)", x->archive,
                   HC_ARCHIVE_MAX_ENTRIES);
}

static hc_status clash(const extraction *x, const char *rel, hc_err *err) {
    char esc[1100];
    return hc__fail(err, HC_INVALID, "'%s': entry '%s' appears twice, or as both a file and a "
                   "folder (names compared after dropping './')", x->archive,
                   hc__escape(rel, esc, sizeof esc));
}

/* Makes the folder path (rel below dest), charged and counted when it is new (the one folder
 * that takes the extraction past a limit is removed with the rest); an existing folder is
 * fine (a folder entry after its files), anything else there is a clash. */
static hc_status make_dir(extraction *x, const char *path, const char *rel, hc_err *err) {
    if (mkdir(path, 0700) == 0) {
        HC_TRY(charge(x, rel, HC_ARCHIVE_DIR_COST, err));
        x->used += HC_ARCHIVE_DIR_COST;
        return count_entry(x, err);
    }
    int e = errno;
    struct stat sb;
    if (e == EEXIST && lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return HC_OK;
    if (e == EEXIST || e == ENOTDIR) return clash(x, rel, err);
    return hc__fail(err, HC_IO, "cannot create '%s': %s", path, strerror(e));
}

/* Makes every folder between dest and path (dest/rel), path itself excluded. */
static hc_status make_parents(extraction *x, const char *path, hc_err *err) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    char *rel = tmp + strlen(x->dest) + 1;
    for (char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
        *p = 0;
        hc_status st = make_dir(x, tmp, rel, err);
        *p = '/';
        if (st) return st;
    }
    return HC_OK;
}

/* dest/rel into path; fails when it does not fit. */
static hc_status entry_path(const extraction *x, const char *rel, char *path, size_t cap,
                            hc_err *err) {
    int n = snprintf(path, cap, "%s/%s", x->dest, rel);
    if (n < 0 || (size_t)n >= cap)
        return hc__fail(err, HC_INVALID, "'%s': entry name too long", x->archive);
    return HC_OK;
}

static hc_status create_file(extraction *x, const char *path, const char *rel, int *fd,
                             hc_err *err) {
    HC_TRY(make_parents(x, path, err));
    *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (*fd >= 0) return HC_OK;
    if (errno == EEXIST || errno == ENOTDIR) return clash(x, rel, err);
    return hc__fail(err, HC_IO, "cannot create '%s': %s", path, strerror(errno));
}

/* Writes one regular entry. Its cost is HC_ARCHIVE_FILE_COST plus its logical size: the
 * largest of the size its header declares, the end of its last block and the bytes
 * decompressed (so overlapping blocks cannot hide work). Holes between blocks and after the
 * last are not written (the file stays sparse) but are counted. */
static hc_status extract_file(extraction *x, struct archive_entry *ent, const char *rel,
                              hc_err *err) {
    char path[4096];
    HC_TRY(entry_path(x, rel, path, sizeof path, err));
    HC_TRY(charge(x, rel, HC_ARCHIVE_FILE_COST, err));
    x->used += HC_ARCHIVE_FILE_COST;
    la_int64_t dsz = archive_entry_size_is_set(ent) ? archive_entry_size(ent) : 0;
    uint64_t declared = dsz > 0 ? (uint64_t)dsz : 0, extent = 0, produced = 0;
    HC_TRY(charge(x, rel, declared, err));
    int fd = -1;
    HC_TRY(create_file(x, path, rel, &fd, err));
    hc_status st = HC_OK;
    char esc[1100];
    for (;;) {
        const void *buf;
        size_t size;
        la_int64_t off;
        int r = archive_read_data_block(x->a, &buf, &size, &off);
        if (r == ARCHIVE_EOF) break;
        uint64_t end = 0;
        if (r != ARCHIVE_OK || off < 0 || !hc__add_u64((uint64_t)off, size, &end) ||
            end > (uint64_t)INT64_MAX) {
            st = hc__fail(err, HC_INVALID, "'%s': cannot read entry '%s': %s", x->archive,
                         hc__escape(rel, esc, sizeof esc),
                         r != ARCHIVE_OK ? archive_error_string(x->a) : "block out of range");
            break;
        }
        extent = end > extent ? end : extent;
        if (!hc__add_u64(produced, size, &produced)) produced = UINT64_MAX;
        uint64_t cost = declared > extent ? declared : extent;
        st = charge(x, rel, produced > cost ? produced : cost, err);
        if (!st) st = hc__pwrite_full(fd, buf, size, (uint64_t)off, path, err);
        if (st) break;
    }
    uint64_t logical = declared > extent ? declared : extent;
    if (!st && ftruncate(fd, (off_t)logical) != 0)
        st = hc__fail(err, HC_IO, "cannot write '%s': %s", path, strerror(errno));
    if (close(fd) != 0 && !st)
        st = hc__fail(err, HC_IO, "cannot write '%s': %s", path, strerror(errno));
    if (!st) x->used += produced > logical ? produced : logical;
    return st;
}

/* A folder entry is made at once, so that a file of the same name, before or after it, is a
 * clash. */
static hc_status extract_dir(extraction *x, const char *rel, hc_err *err) {
    char path[4096];
    HC_TRY(entry_path(x, rel, path, sizeof path, err));
    HC_TRY(make_parents(x, path, err));
    return make_dir(x, path, rel, err);
}

static hc_status extract_entry(extraction *x, struct archive_entry *ent, hc_err *err) {
    const char *name = archive_entry_pathname(ent);
    char rel[HC_ARCHIVE_MAX_NAME + 1], esc[1100];
    const char *why = name ? normalise_name(name, rel, sizeof rel) : "it has none";
    mode_t type = archive_entry_filetype(ent);
    if (!why && !rel[0] && type != AE_IFDIR) why = "only a folder may be named '.'";
    if (why)
        return hc__fail(err, HC_INVALID, "'%s': entry '%s' has an unsafe name (%s)", x->archive,
                       name ? hc__escape(name, esc, sizeof esc) : "(none)", why);
    if (archive_entry_hardlink(ent) || type == AE_IFLNK)
        return hc__fail(err, HC_INVALID, "'%s': entry '%s' is a link; links are refused (pack "
                       "the files they point to: tar -h --hard-dereference)", x->archive,
                       hc__escape(rel, esc, sizeof esc));
    if (type == AE_IFDIR) return rel[0] ? extract_dir(x, rel, err) : HC_OK;
    if (type != AE_IFREG)
        return hc__fail(err, HC_INVALID, "'%s': entry '%s' is not a regular file", x->archive,
                       hc__escape(rel, esc, sizeof esc));
    return extract_file(x, ent, rel, err);
}

/* The format readers, and only the built-in filters: ARCHIVE_WARN from a filter means
 * libarchive would run an external program, which is refused. */
static hc_status setup(struct archive *a, hc_err *err) {
    int (*filters[])(struct archive *) = {archive_read_support_filter_gzip,
                                          archive_read_support_filter_zstd,
                                          archive_read_support_filter_xz,
                                          archive_read_support_filter_bzip2,
                                          archive_read_support_filter_lz4};
    const char *fnames[] = {"gzip", "zstd", "xz", "bzip2", "lz4"};
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (filters[i](a) != ARCHIVE_OK)
            return hc__fail(err, HC_UNSUPPORTED, "libarchive lacks built-in %s support", fnames[i]);
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_format_zip(a) != ARCHIVE_OK)
        return hc__fail(err, HC_INTERNAL, "libarchive: %s", archive_error_string(a));
    return HC_OK;
}

static void set_limit(extraction *x, const hc_ckpt_opts *o) {
    uint64_t max = o && o->max_extract_bytes ? o->max_extract_bytes : HC_EXTRACT_MAX_BYTES;
    x->ratio = o && o->max_extract_ratio ? o->max_extract_ratio : HC_EXTRACT_MAX_RATIO;
    uint64_t by_ratio;
    if (!hc__mul_u64(x->ratio, x->archive_size, &by_ratio)) by_ratio = UINT64_MAX;
    x->by_ratio = by_ratio < max;
    x->limit = x->by_ratio ? by_ratio : max;
}

hc_status hc__archive_extract(const char *archive, const char *dest, const hc_ckpt_opts *o,
                             hc_err *err) {
    extraction x = {.archive = archive, .dest = dest};
    int fd = -1;
    hc_status st = hc__open_regular(archive, &fd, &x.archive_size, err);
    if (st) return st;
    set_limit(&x, o);
    x.a = archive_read_new();
    if (!x.a) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    st = setup(x.a, err);
    if (st) goto out;
    if (archive_read_open_fd(x.a, fd, 1 << 16) != ARCHIVE_OK) {
        st = hc__fail(err, HC_INVALID, "'%s': not a readable tar or zip archive: %s", archive,
                     archive_error_string(x.a));
        goto out;
    }
    for (;;) {
        struct archive_entry *ent;
        int r = archive_read_next_header(x.a, &ent);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            st = hc__fail(err, HC_INVALID, "'%s': %s archive: %s", archive,
                         x.entries ? "corrupt" : "not a tar or zip", archive_error_string(x.a));
            goto out;
        }
        st = count_entry(&x, err);
        if (!st) st = extract_entry(&x, ent, err);
        if (st) goto out;
    }
    if (x.entries == 0) st = hc__fail(err, HC_INVALID, "'%s': archive is empty", archive);
out:
    if (x.a) archive_read_free(x.a);
    close(fd);
    return st;
}
