/* main.c: the `hconvert` command line. Results go to stdout, progress and errors to stderr;
 * exit 0 success, 1 invalid input or failed check, 2 bad usage, 3 I/O or internal error. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "hconvert.h"
#include "inspect.h"

static const char usage_text[] =
    "usage: hconvert <command> [options]\n"
    "\n"
    "commands:\n"
    "  convert SRC OUT [--target passthrough] [--tp N] [--threads N] [--dry-run] [--json]\n"
    "        convert the checkpoint SRC (folder, .safetensors file, or .tar/.tar.gz/.tar.zst/.zip\n"
    "        of one) into the folder OUT: OUT/" HC_CONTAINER_FILE " plus the non-weight files\n"
    "  inspect PATH [--json] [--tensors]\n"
    "        describe a checkpoint or a container (headers only)\n"
    "  verify OUT\n"
    "        recompute every hash of the container in OUT (a folder or a container file)\n"
    "\n"
    "options:\n"
    "  -h, --help     show this help\n"
    "  --version      show the version\n"
    "\n"
    "exit status: 0 success, 1 invalid input or failed check, 2 bad usage, 3 i/o or internal "
    "error\n";

typedef struct {
    const char *pos[4];
    int npos;
    bool json, tensors, dry_run;
    long threads, tp;
    const char *target;
} args_t;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hconvert: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nrun 'hconvert --help' for usage\n");
    va_end(ap);
    return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* Parses options valid for a command (allowed: a string of letters j t d T p g). */
static int parse_args(int argc, char **argv, const char *allowed, int maxpos, args_t *a) {
    memset(a, 0, sizeof *a);
    a->tp = 1;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        char need = 0;
        if (!strcmp(s, "--json")) need = 'j', a->json = true;
        else if (!strcmp(s, "--tensors")) need = 't', a->tensors = true;
        else if (!strcmp(s, "--dry-run")) need = 'd', a->dry_run = true;
        else if (!strcmp(s, "--threads") || !strcmp(s, "--tp") || !strcmp(s, "--target")) {
            need = s[2] == 't' && s[3] == 'h' ? 'T' : s[3] == 'p' ? 'p' : 'g';
            if (!strchr(allowed, need)) return usage_error("option '%s' does not apply here", s);
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", s);
            const char *v = argv[++i];
            if (need == 'T' && !parse_long(v, 0, 4096, &a->threads))
                return usage_error("--threads '%s': expected an integer in [0, 4096]", v);
            if (need == 'p' && !parse_long(v, 1, 64, &a->tp))
                return usage_error("--tp '%s': expected an integer in [1, 64]", v);
            if (need == 'g') a->target = v;
            continue;
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option '%s'", s);
        } else {
            if (a->npos >= maxpos) return usage_error("unexpected argument '%s'", s);
            a->pos[a->npos++] = s;
            continue;
        }
        if (!strchr(allowed, need)) return usage_error("option '%s' does not apply here", s);
    }
    return 0;
}

static int fail(hc_status st, const char *msg) {
    fprintf(stderr, "hconvert: %s\n", msg && *msg ? msg : hc_strerror(st));
    return hc_status_exit_code(st);
}

static int cmd_convert(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "jdTpg", 2, &a);
    if (r) return r;
    if (a.npos != 2) return usage_error("%s", "convert needs SRC and OUT");
    if (a.target && strcmp(a.target, "passthrough") != 0)
        return usage_error("--target '%s': this version writes only 'passthrough' (source "
                           "layouts kept); kernel layouts come with the repack stage", a.target);
    hc_converter *c = hc_converter_create();
    if (!c) return fail(HC_NOMEM, "out of memory");
    hc_status st = hc_converter_set(c, HC_CONV_TP_SIZE, a.tp);
    if (!st) st = hc_converter_set(c, HC_CONV_THREADS, a.threads);
    if (!st) st = hc_converter_set(c, HC_CONV_DRY_RUN, a.dry_run);
    if (!st) st = hc_converter_set(c, HC_CONV_PROGRESS, isatty(2) && !a.json);
    if (!st) st = hc_converter_run(c, a.pos[0], a.pos[1]);
    int rc;
    if (st) {
        rc = fail(st, hc_converter_errmsg(c));
    } else {
        const hc_conv_stats *s = hc_converter_stats(c);
        double gbs = s->seconds > 0 ? (double)s->source_bytes / s->seconds / 1e9 : 0;
        if (a.json)
            printf("{\"dry_run\": %s, \"tensors\": %llu, \"source_bytes\": %llu, "
                   "\"container_bytes\": %llu, \"files_copied\": %llu, \"seconds\": %.6f}\n",
                   a.dry_run ? "true" : "false", (unsigned long long)s->tensors,
                   (unsigned long long)s->source_bytes, (unsigned long long)s->container_bytes,
                   (unsigned long long)s->files_copied, s->seconds);
        else if (a.dry_run)
            printf("plan: %llu tensors, %llu bytes, layout 'source' (passthrough); nothing "
                   "written\n", (unsigned long long)s->tensors,
                   (unsigned long long)s->source_bytes);
        else
            printf("converted %llu tensors (%.3f MB) into %s/%s (%llu bytes) and copied %llu "
                   "files in %.3f s (%.2f GB/s)\n", (unsigned long long)s->tensors,
                   (double)s->source_bytes / 1e6, a.pos[1], HC_CONTAINER_FILE,
                   (unsigned long long)s->container_bytes, (unsigned long long)s->files_copied,
                   s->seconds, gbs);
        rc = 0;
    }
    hc_converter_free(c);
    return rc;
}

static int cmd_inspect(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "jt", 1, &a);
    if (r) return r;
    if (a.npos != 1) return usage_error("%s", "inspect needs PATH");
    hc_err err = {0};
    hc_status st = hc_inspect(a.pos[0], a.json, a.tensors, stdout, &err);
    return st ? fail(st, err.msg) : 0;
}

static int cmd_verify(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "", 1, &a);
    if (r) return r;
    if (a.npos != 1) return usage_error("%s", "verify needs OUT");
    char *file = hc_find_container(a.pos[0]);
    if (!file) {
        if (access(a.pos[0], F_OK) != 0) {
            char msg[HC_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "cannot open '%s': %s", a.pos[0], strerror(errno));
            return fail(HC_IO, msg);
        }
        char msg[HC_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "'%s' is not an hconvert container nor a folder holding "
                 "'%s'", a.pos[0], HC_CONTAINER_FILE);
        return fail(HC_INVALID, msg);
    }
    hc_container *c = NULL;
    char msg[HC_ERRMSG_MAX];
    hc_status st = hc_container_open(file, 0, &c, msg, sizeof msg);
    int rc;
    if (st) {
        rc = fail(st, msg);
    } else {
        uint64_t nbad = 0;
        st = hc_container_verify(c, &nbad);
        if (st) {
            fprintf(stderr, "hconvert: %s\nhconvert: verify failed: %llu problem%s in '%s'\n",
                    hc_container_errmsg(c), (unsigned long long)nbad, nbad == 1 ? "" : "s", file);
            rc = hc_status_exit_code(st);
        } else {
            printf("verified '%s': %zu tensors, %llu bytes, every hash matches\n", file,
                   hc_container_tensor_count(c), (unsigned long long)hc_container_file_size(c));
            rc = 0;
        }
    }
    hc_container_free(c);
    free(file);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("hconvert %s (container format %d.%d)\n", HC_VERSION_STRING, 1, 0);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        }
    if (!strcmp(cmd, "convert")) return cmd_convert(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
    if (!strcmp(cmd, "verify")) return cmd_verify(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}
