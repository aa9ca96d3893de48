/* outdir.c: the folders convert writes, as later commands find them: a container's folder
 * or one folder per rank, verified (`hconvert verify`) and precompiled for a GPU target
 * (`convert --target sm90|sm80`). What they find is returned; the CLI prints it. */
#include "outdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container_fmt.h"
#include "hcrt.h"

/* One container file's verification. */
static void verify_file(char *file, hc_outdir_verified *v) {
    hc_container *c = NULL;
    v->file = file;
    v->st = hc_container_open(file, 0, &c, v->msg, sizeof v->msg);
    if (!v->st) {
        v->checked = true;
        v->st = hc_container_verify(c, &v->nbad);
        if (v->st) snprintf(v->msg, sizeof v->msg, "%s", hc_container_errmsg(c));
        v->tensors = hc_container_tensor_count(c);
        v->bytes = hc_container_file_size(c);
    }
    hc_container_free(c);
}

void hc__outdir_verify(const char *path, void (*report)(void *ctx, const hc_outdir_verified *v),
                       void *ctx) {
    hc_outdir_verified v = {.path = path};
    char *file = hc_container_locate(path);
    if (!file) { /* a tensor-parallel output: every rank */
        char *r0 = hc__asprintf("%s/rank0", path);
        char *f0 = r0 ? hc_container_locate(r0) : NULL;
        free(r0);
        if (f0) {
            free(f0);
            for (unsigned rank = 0;; rank++) {
                char *rd = hc__asprintf("%s/rank%u", path, rank);
                if (!rd || access(rd, F_OK) != 0) {
                    free(rd);
                    return;
                }
                hc__outdir_verify(rd, report, ctx);
                free(rd);
            }
        }
        if (access(path, F_OK) != 0) {
            v.st = HC_IO;
            snprintf(v.msg, sizeof v.msg, "cannot open '%s': %s", path, strerror(errno));
        } else {
            v.st = HC_INVALID;
            snprintf(v.msg, sizeof v.msg, "'%s' is not an hconvert container nor a folder "
                     "holding '%s'", path, HC_CONTAINER_FILE);
        }
        report(ctx, &v);
        return;
    }
    verify_file(file, &v);
    report(ctx, &v);
    free(file);
}

hc_status hc__outdir_precompile(const char *out, unsigned tp, const char *arch,
                                hc_outdir_precompiled *r) {
    memset(r, 0, sizeof *r);
    for (unsigned rank = 0; rank < (tp > 1 ? tp : 1); rank++) {
        char *path = tp > 1 ? hc__asprintf("%s/rank%u/" HC_CONTAINER_FILE, out, rank)
                            : hc__asprintf("%s/" HC_CONTAINER_FILE, out);
        hc_container *ct = NULL;
        unsigned built = 0;
        hc_status st = path ? hc_container_open(path, 0, &ct, r->msg, sizeof r->msg) : HC_NOMEM;
        if (!st) st = hc_gpu_precompile(ct, arch, &built, r->msg, sizeof r->msg);
        hc_container_free(ct);
        free(path);
        if (st) return st;
        r->built += built;
    }
    r->unstored = hc_gpu_cache_unstored(r->why, sizeof r->why) != 0;
    return HC_OK;
}
