/* jit.c: NVRTC through dlopen (a machine without CUDA still runs the CPU paths), kernels
 * compiled from the built-in sources, cubins cached on disk under a key that covers source,
 * headers, options, NVRTC version and architecture. Each entry carries its key, length and
 * hash (a damaged one is rebuilt) and is written atomically (unique temporary name, rename),
 * so two processes may fill the cache at once; a cache that cannot be written is reported. */
#include "jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "container_fmt.h" /* little-endian helpers */

static struct {
    int loaded, failed;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*version)(int *, int *);
    const char *(*errstr)(nvrtcResult);
} nv;
static pthread_mutex_t nv_mu = PTHREAD_MUTEX_INITIALIZER;

static hc_status load_nvrtc(hc_err *err) {
    pthread_mutex_lock(&nv_mu);
    if (!nv.loaded && !nv.failed) {
        static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                            "/usr/local/cuda/lib64/libnvrtc.so"};
        void *h = hc__dlopen_first(names, sizeof names / sizeof names[0]);
        if (h) {
            *(void **)&nv.create = dlsym(h, "nvrtcCreateProgram");
            *(void **)&nv.compile = dlsym(h, "nvrtcCompileProgram");
            *(void **)&nv.log_size = dlsym(h, "nvrtcGetProgramLogSize");
            *(void **)&nv.log = dlsym(h, "nvrtcGetProgramLog");
            *(void **)&nv.cubin_size = dlsym(h, "nvrtcGetCUBINSize");
            *(void **)&nv.cubin = dlsym(h, "nvrtcGetCUBIN");
            *(void **)&nv.destroy = dlsym(h, "nvrtcDestroyProgram");
            *(void **)&nv.version = dlsym(h, "nvrtcVersion");
            *(void **)&nv.errstr = dlsym(h, "nvrtcGetErrorString");
        }
        nv.loaded = h && nv.create && nv.compile && nv.log_size && nv.log && nv.cubin_size &&
                    nv.cubin && nv.destroy && nv.version && nv.errstr;
        nv.failed = !nv.loaded;
    }
    pthread_mutex_unlock(&nv_mu);
    return nv.loaded ? HC_OK : hc__fail(err, HC_UNSUPPORTED, "NVRTC (libnvrtc.so) cannot be loaded");
}

hc_status hc__jit_version(int *major, int *minor, hc_err *err) {
    HC_TRY(load_nvrtc(err));
    nv.version(major, minor);
    return HC_OK;
}

/* Without HOME (cron, services, containers) the cache is a folder of this user's own under
 * /tmp, never one shared with other users (who could plant cubins in it). */
static char *cache_dir(void) {
    const char *d = getenv("HC_CACHE_DIR");
    if (d && *d) return hc__strdup(d);
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && *x) return hc__asprintf("%s/hconvert", x);
    if (home && *home) return hc__asprintf("%s/.cache/hconvert", home);
    return hc__asprintf("/tmp/hconvert-cache-%u", (unsigned)geteuid());
}

static void mkdirs(const char *path) {
    char *p = hc__strdup(path);
    for (char *s = p ? p + 1 : NULL; s && *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    if (p) mkdir(p, 0700); /* the cache folder itself: this user's */
    free(p);
}

/* A cubin is code the process runs: the cache folder and an entry are trusted only when this
 * user owns them and nobody else may write them. NULL when trusted, else why not. */
static const char *untrusted(const struct stat *sb) {
    if (sb->st_uid != geteuid()) return "owned by another user";
    if (sb->st_mode & (S_IWGRP | S_IWOTH)) return "writable by other users";
    return NULL;
}

/* The cache key: every input that changes the cubin. */
static uint64_t cache_key(const char *main, const char *arch, const char *const *opts, int nopts,
                          int vmaj, int vmin) {
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset(s);
    for (const hc_kernel_source *k = hc__kernel_sources; k->name; k++) {
        XXH3_64bits_update(s, k->name, strlen(k->name) + 1);
        XXH3_64bits_update(s, k->text, strlen(k->text) + 1);
    }
    XXH3_64bits_update(s, main, strlen(main) + 1);
    XXH3_64bits_update(s, arch, strlen(arch) + 1);
    for (int i = 0; i < nopts; i++) XXH3_64bits_update(s, opts[i], strlen(opts[i]) + 1);
    int v[2] = {vmaj, vmin};
    XXH3_64bits_update(s, v, sizeof v);
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return h;
}

/* A cache entry (docs/gpu.md): a 32-byte header, then the cubin. The header carries the key
 * (a file renamed or copied under another name is no hit), the cubin's length and its XXH3-64,
 * so a truncated, overwritten or bit-flipped entry is detected and rebuilt. */
#define ENTRY_MAGIC "HCCUBIN1"
#define ENTRY_HEADER 32u
#define ENTRY_MAX_CUBIN (1ull << 30)

/* 1: a valid entry for key (its cubin in *cubin, *size); 0: no entry; -1: an entry that fails
 * its check (bad says how: it is rebuilt and rewritten). */
static int cache_read(const char *dir, const char *path, uint64_t key, void **cubin, size_t *size,
                      char *bad, size_t cap) {
    struct stat sb, ds;
    if (lstat(path, &sb) != 0) return 0; /* no entry (or no folder) */
    const char *why = S_ISLNK(sb.st_mode) ? "a symbolic link" : untrusted(&sb);
    if (!why && (stat(dir, &ds) != 0 || untrusted(&ds))) why = "in a folder others may write";
    if (why) {
        snprintf(bad, cap, "the entry is %s", why);
        return -1;
    }
    char *data = NULL;
    size_t n = 0;
    hc_err e = {0};
    uint64_t len = 0;
    if (hc__read_file(path, ENTRY_MAX_CUBIN + ENTRY_HEADER, &data, &n, &e))
        snprintf(bad, cap, "%s", e.msg);
    else if (n < ENTRY_HEADER)
        snprintf(bad, cap, "%zu bytes, less than the %u-byte entry header", n, ENTRY_HEADER);
    else if (memcmp(data, ENTRY_MAGIC, 8) != 0)
        snprintf(bad, cap, "not a cache entry (no \"" ENTRY_MAGIC "\" header)");
    else if (hc__le64((unsigned char *)data + 8) != key)
        snprintf(bad, cap, "the entry holds another key");
    else if ((len = hc__le64((unsigned char *)data + 16)) != n - ENTRY_HEADER)
        snprintf(bad, cap, "the header says %llu cubin bytes, the file holds %zu",
                 (unsigned long long)len, n - ENTRY_HEADER);
    else if (XXH3_64bits(data + ENTRY_HEADER, (size_t)len) != hc__le64((unsigned char *)data + 24))
        snprintf(bad, cap, "cubin hash mismatch");
    else {
        memmove(data, data + ENTRY_HEADER, (size_t)len);
        *cubin = data, *size = (size_t)len;
        return 1;
    }
    free(data);
    return -1;
}

/* hc__jit_set_cache: whether compiles use the cache (tests time and check cold builds). */
static atomic_bool cache_on = true;

void hc__jit_set_cache(bool on) { atomic_store(&cache_on, on); }

/* The first reason this process could not store a cubin (hc_gpu_cache_unstored). */
static struct {
    pthread_mutex_t mu;
    unsigned count;
    char why[512];
} unstored = {PTHREAD_MUTEX_INITIALIZER, 0, ""};

static void note_unstored(const char *why) {
    pthread_mutex_lock(&unstored.mu);
    if (!unstored.count++) snprintf(unstored.why, sizeof unstored.why, "%s", why);
    pthread_mutex_unlock(&unstored.mu);
}

int hc_gpu_cache_unstored(char *why, size_t cap) {
    pthread_mutex_lock(&unstored.mu);
    int any = unstored.count > 0;
    if (any && why && cap) snprintf(why, cap, "%s", unstored.why);
    pthread_mutex_unlock(&unstored.mu);
    return any;
}

/* Writes the entry under a unique temporary name and renames it over path (a reader sees no
 * entry or a whole one). False, with why naming the cache folder and the failing step, when
 * the cache cannot be written (read-only, full disk). */
static bool cache_write(const char *dir, const char *path, uint64_t key, const void *cubin,
                        size_t size, char *why, size_t cap) {
    mkdirs(dir);
    struct stat ds;
    const char *dbad = lstat(dir, &ds) != 0 ? "missing" : !S_ISDIR(ds.st_mode) ? "not a folder"
                                                                              : untrusted(&ds);
    if (dbad) {
        snprintf(why, cap, "cannot write the kernel cache '%s': the folder is %s", dir, dbad);
        return false;
    }
    char *tmp = hc__asprintf("%s.tmp-XXXXXX", path); /* unique across processes and hosts */
    unsigned char hdr[ENTRY_HEADER];
    memcpy(hdr, ENTRY_MAGIC, 8);
    hc__put_le64(hdr + 8, key);
    hc__put_le64(hdr + 16, size);
    hc__put_le64(hdr + 24, XXH3_64bits(cubin, size));
    hc_err e = {0};
    int fd = tmp ? mkostemp(tmp, O_CLOEXEC) : -1;
    bool created = fd >= 0, ok = false;
    if (!tmp) snprintf(e.msg, sizeof e.msg, "out of memory");
    else if (fd < 0) snprintf(e.msg, sizeof e.msg, "cannot create a file there: %s", strerror(errno));
    else if (!hc__pwrite_full(fd, hdr, sizeof hdr, 0, tmp, &e) &&
             !hc__pwrite_full(fd, cubin, size, sizeof hdr, tmp, &e)) {
        int r = close(fd);
        fd = -1;
        if (r != 0) snprintf(e.msg, sizeof e.msg, "cannot close '%s': %s", tmp, strerror(errno));
        else if (rename(tmp, path) != 0)
            snprintf(e.msg, sizeof e.msg, "cannot rename '%s': %s", tmp, strerror(errno));
        else ok = true;
    }
    if (fd >= 0) close(fd);
    if (created && !ok) unlink(tmp); /* only the file this call made */
    free(tmp);
    if (!ok) snprintf(why, cap, "cannot write the kernel cache '%s': %s", dir, e.msg);
    return ok;
}

/* NVRTC's log of prog, malloc'd and terminated (NULL when out of memory). */
static char *program_log(nvrtcProgram prog) {
    size_t ls = 0;
    nv.log_size(prog, &ls);
    char *log = malloc(ls + 1);
    if (log) nv.log(prog, log), log[ls] = 0;
    return log;
}

/* NVRTC compiles main for arch: the cubin (malloc'd) and, when asked, the log. */
static hc_status nvrtc_build(const char *main, const char *src, const char *arch,
                             const char *const *opts, int nopts, void **cubin, size_t *size,
                             char **log_out, hc_err *err) {
    int nh = 0;
    while (hc__kernel_sources[nh].name) nh++;
    const char **hnames = calloc((size_t)nh + 1, sizeof *hnames);
    const char **htexts = calloc((size_t)nh + 1, sizeof *htexts);
    const char **all = calloc((size_t)nopts + 4, sizeof *all);
    char *archopt = hc__asprintf("--gpu-architecture=%s", arch);
    hc_status st = HC_OK;
    nvrtcProgram prog = NULL;
    if (!hnames || !htexts || !all || !archopt) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < nh; i++) hnames[i] = hc__kernel_sources[i].name, htexts[i] = hc__kernel_sources[i].text;
    int na = 0;
    all[na++] = archopt;
    all[na++] = "--std=c++17";
    for (int i = 0; i < nopts; i++) all[na++] = opts[i];
    nvrtcResult r = nv.create(&prog, src, main, nh, htexts, hnames);
    if (r != NVRTC_SUCCESS) {
        st = hc__fail(err, HC_INTERNAL, "NVRTC: cannot create program '%s': %s", main, nv.errstr(r));
        goto out;
    }
    r = nv.compile(prog, na, all);
    if (r != NVRTC_SUCCESS) {
        /* each line can gain "; " for its newline: twice the log is room enough */
        char *log = program_log(prog), *errs = log ? malloc(2 * strlen(log) + 1) : NULL;
        if (log && errs) { /* the error lines first: warnings would fill the message */
            errs[0] = 0;
            for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
                if (strstr(line, "error")) strcat(strcat(errs, line), "; ");
        }
        st = hc__fail(err, HC_INTERNAL, "NVRTC: '%s' for %s does not compile: %s", main, arch,
                     errs && errs[0] ? errs : nv.errstr(r));
        free(log);
        free(errs);
        goto out;
    }
    if (nv.cubin_size(prog, size) != NVRTC_SUCCESS || !(*cubin = malloc(*size)) ||
        nv.cubin(prog, *cubin) != NVRTC_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        st = hc__fail(err, HC_INTERNAL, "NVRTC: no cubin for '%s' (%s)", main, arch);
        goto out;
    }
    if (log_out) *log_out = program_log(prog);
out:
    if (prog) nv.destroy(&prog);
    free(hnames), free(htexts), free(all), free(archopt);
    return st;
}

/* The cache around nvrtc_build: a valid entry is a hit; a missing or bad one is built and
 * (re)written; note says which, and why an entry could not be stored. */
static hc_status compile(const char *main, const char *arch, const char *const *opts, int nopts,
                         void **cubin, size_t *size, char **log_out, hc_jit_cache_note *note,
                         hc_err *err) {
    hc_jit_cache_note local;
    if (!note) note = &local;
    memset(note, 0, sizeof *note);
    *cubin = NULL, *size = 0;
    if (log_out) *log_out = NULL;
    HC_TRY(load_nvrtc(err));
    int vmaj = 0, vmin = 0;
    nv.version(&vmaj, &vmin);
    const char *src = NULL;
    for (const hc_kernel_source *k = hc__kernel_sources; k->name; k++)
        if (!strcmp(k->name, main)) src = k->text;
    if (!src) return hc__fail(err, HC_INTERNAL, "no built-in kernel source '%s'", main);
    bool use_cache = atomic_load(&cache_on) && !log_out; /* a cache hit has no log */
    char *dir = use_cache ? cache_dir() : NULL, *path = NULL;
    uint64_t key = 0;
    hc_status st = HC_OK;
    if (dir) {
        char hex[17];
        key = cache_key(main, arch, opts, nopts, vmaj, vmin);
        hc__hex64(key, hex);
        path = hc__asprintf("%s/%s-%s.cubin", dir, arch, hex);
        int r = path ? cache_read(dir, path, key, cubin, size, note->bad, sizeof note->bad) : 0;
        if (r > 0) {
            note->state = HC_JIT_CACHE_HIT;
            goto out;
        }
        note->rebuilt = r < 0;
    }
    st = nvrtc_build(main, src, arch, opts, nopts, cubin, size, log_out, err);
    if (!st && path) {
        bool stored = cache_write(dir, path, key, *cubin, *size, note->why, sizeof note->why);
        note->state = stored ? HC_JIT_CACHE_STORED : HC_JIT_CACHE_UNSTORED;
        if (!stored) note_unstored(note->why);
    }
out:
    free(dir), free(path);
    return st;
}

hc_status hc__jit_compile(const char *main, const char *arch, const char *const *opts, int nopts,
                         void **cubin, size_t *size, hc_err *err) {
    return compile(main, arch, opts, nopts, cubin, size, NULL, NULL, err);
}

hc_status hc__jit_compile_note(const char *main, const char *arch, const char *const *opts,
                              int nopts, void **cubin, size_t *size, hc_jit_cache_note *note,
                              hc_err *err) {
    return compile(main, arch, opts, nopts, cubin, size, NULL, note, err);
}

hc_status hc__jit_compile_log(const char *main, const char *arch, const char *const *opts,
                             int nopts, void **cubin, size_t *size, char **log_out, hc_err *err) {
    return compile(main, arch, opts, nopts, cubin, size, log_out, NULL, err);
}
