/* jit.c: NVRTC through dlopen (a machine without CUDA still runs the CPU paths), kernels
 * compiled from the built-in sources, cubins cached on disk under a key that covers source,
 * headers, options, NVRTC version and architecture; cache files are written atomically
 * (temporary name, rename), so two processes may fill the cache at once. */
#include "jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

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
        void *h = hc_dlopen_first(names, sizeof names / sizeof names[0]);
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
    return nv.loaded ? HC_OK : hc_fail(err, HC_UNSUPPORTED, "NVRTC (libnvrtc.so) cannot be loaded");
}

hc_status hc_jit_version(int *major, int *minor, hc_err *err) {
    HC_TRY(load_nvrtc(err));
    nv.version(major, minor);
    return HC_OK;
}

static char *cache_dir(void) {
    const char *d = getenv("HC_CACHE_DIR");
    if (d && *d) return hc_strdup(d);
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && *x) return hc_asprintf("%s/hconvert", x);
    return hc_asprintf("%s/.cache/hconvert", home && *home ? home : "/tmp");
}

static void mkdirs(const char *path) {
    char *p = hc_strdup(path);
    for (char *s = p ? p + 1 : NULL; s && *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    if (p) mkdir(p, 0755);
    free(p);
}

/* The cache key: every input that changes the cubin. */
static uint64_t cache_key(const char *main, const char *arch, const char *const *opts, int nopts,
                          int vmaj, int vmin) {
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset(s);
    for (const hc_kernel_source *k = hc_kernel_sources; k->name; k++) {
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

static bool cache_read(const char *path, void **cubin, size_t *size) {
    char *data = NULL;
    size_t n = 0;
    hc_err e = {0};
    if (hc_read_file(path, 1u << 30, &data, &n, &e) || n == 0) {
        free(data);
        return false;
    }
    *cubin = data, *size = n;
    return true;
}

static void cache_write(const char *dir, const char *path, const void *cubin, size_t size) {
    mkdirs(dir);
    char *tmp = hc_asprintf("%s.tmp-%d", path, (int)getpid());
    int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    hc_err e = {0};
    if (fd >= 0 && !hc_pwrite_full(fd, cubin, size, 0, tmp, &e) && close(fd) == 0) {
        fd = -1;
        rename(tmp, path); /* atomic: a reader sees no cubin or a whole one */
    }
    if (fd >= 0) close(fd);
    if (tmp) unlink(tmp);
    free(tmp);
}

/* NVRTC's log of prog, malloc'd and terminated (NULL when out of memory). */
static char *program_log(nvrtcProgram prog) {
    size_t ls = 0;
    nv.log_size(prog, &ls);
    char *log = malloc(ls + 1);
    if (log) nv.log(prog, log), log[ls] = 0;
    return log;
}

hc_status hc_jit_compile(const char *main, const char *arch, const char *const *opts, int nopts,
                         void **cubin, size_t *size, hc_err *err) {
    return hc_jit_compile_log(main, arch, opts, nopts, cubin, size, NULL, err);
}

hc_status hc_jit_compile_log(const char *main, const char *arch, const char *const *opts,
                             int nopts, void **cubin, size_t *size, char **log_out, hc_err *err) {
    *cubin = NULL, *size = 0;
    if (log_out) *log_out = NULL;
    HC_TRY(load_nvrtc(err));
    int vmaj = 0, vmin = 0;
    nv.version(&vmaj, &vmin);
    const char *src = NULL;
    int nh = 0;
    for (const hc_kernel_source *k = hc_kernel_sources; k->name; k++, nh++)
        if (!strcmp(k->name, main)) src = k->text;
    if (!src) return hc_fail(err, HC_INTERNAL, "no built-in kernel source '%s'", main);
    bool use_cache = !getenv("HC_JIT_NO_CACHE") && !log_out; /* a cache hit has no log */
    char *dir = use_cache ? cache_dir() : NULL, *path = NULL;
    if (dir) {
        char hex[17];
        hc_hex64(cache_key(main, arch, opts, nopts, vmaj, vmin), hex);
        path = hc_asprintf("%s/%s-%s.cubin", dir, arch, hex);
        if (path && cache_read(path, cubin, size)) {
            free(dir), free(path);
            return HC_OK;
        }
    }
    const char **hnames = calloc((size_t)nh + 1, sizeof *hnames);
    const char **htexts = calloc((size_t)nh + 1, sizeof *htexts);
    const char **all = calloc((size_t)nopts + 4, sizeof *all);
    char *archopt = hc_asprintf("--gpu-architecture=%s", arch);
    hc_status st = HC_OK;
    nvrtcProgram prog = NULL;
    if (!hnames || !htexts || !all || !archopt) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < nh; i++) hnames[i] = hc_kernel_sources[i].name, htexts[i] = hc_kernel_sources[i].text;
    int na = 0;
    all[na++] = archopt;
    all[na++] = "--std=c++17";
    for (int i = 0; i < nopts; i++) all[na++] = opts[i];
    nvrtcResult r = nv.create(&prog, src, main, nh, htexts, hnames);
    if (r != NVRTC_SUCCESS) {
        st = hc_fail(err, HC_INTERNAL, "NVRTC: cannot create program '%s': %s", main, nv.errstr(r));
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
        st = hc_fail(err, HC_INTERNAL, "NVRTC: '%s' for %s does not compile: %s", main, arch,
                     errs && errs[0] ? errs : nv.errstr(r));
        free(log);
        free(errs);
        goto out;
    }
    if (nv.cubin_size(prog, size) != NVRTC_SUCCESS || !(*cubin = malloc(*size)) ||
        nv.cubin(prog, *cubin) != NVRTC_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        st = hc_fail(err, HC_INTERNAL, "NVRTC: no cubin for '%s' (%s)", main, arch);
        goto out;
    }
    if (log_out) *log_out = program_log(prog);
    if (path) cache_write(dir, path, *cubin, *size);
out:
    if (prog) nv.destroy(&prog);
    free(hnames), free(htexts), free(all), free(archopt), free(dir), free(path);
    return st;
}
