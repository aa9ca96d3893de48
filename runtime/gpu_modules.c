/* gpu_modules.c: the kernel modules -- one NVRTC build of kernels/tile_mma.cu per kind of layer
 * (codec, scale kind, group, zero points), loaded with the kernels of the families the device
 * runs (gpu_families.h) and their shared memory set. hc_gpu_model_load and hc_gpu_precompile
 * both go through hc__gpu_layer_kind and hc__gpu_kind_compile, so `convert --target` fills the
 * cache with exactly the modules a model load asks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gpu_int.h"
#include "jit.h"

static const char *codec_name(unsigned codec) {
    const hc_layout_row *row = hc__layout_by_codec(codec);
    return row ? row->name : "?";
}

static bool kind_eq(hc_gpu_kind a, hc_gpu_kind b) {
    return a.codec == b.codec && a.sk == b.sk && a.lgs == b.lgs && a.zp == b.zp;
}

/* A layer whose 4-bit zero point z the GPU decode does not take (contract/layout.h
 * hc__gpu_zero_fits): its constant (at NULL) or the stored byte at *at. */
static hc_status zero_range(const hc_tensor_info *t, unsigned z, const hc_tile_zero_at *at,
                            hc_err *err) {
    char where[96] = "";
    if (at)
        snprintf(where, sizeof where, " (chunk %llu, tile row %u, group %u)",
                 (unsigned long long)at->chunk, at->row, at->group);
    return hc__fail(err, HC_UNSUPPORTED, "'%s': a 4-bit zero point of %u%s is above %d, which the "
                    "GPU decode does not take exactly (the CPU executor runs it; this container "
                    "was tiled before convert kept such layers in their source layout: convert "
                    "the checkpoint again)", t->name, z, where, HC_GPU_ZERO4_MAX);
}

hc_status hc__gpu_layer_kind(const hc_tensor_info *t, const hc_tile_params *p, hc_gpu_kind *k,
                            hc_err *err) {
    const hc_layout_row *row = hc__layout_row_of(p->kind, p->code_bits, p->sign_magnitude);
    hc_core_params cp;
    hc__tile_core_params(p, &cp);
    *k = (hc_gpu_kind){row ? row->codec : 0, cp.scale_kind, p->S == 1 ? 2u : p->S == 2 ? 1u : 0u,
                       p->zeros};
    switch (hc__tile_gpu_rule(p)) {
    case HC_GPU_NO_CODEC:
        return hc__fail(err, HC_UNSUPPORTED, "'%s': layout %s has no GPU kernel", t->name,
                       t->layout);
    case HC_GPU_SMALL_GROUPS:
        return hc__fail(err, HC_UNSUPPORTED, "'%s': scale groups of %llu columns; the GPU "
                       "kernels need groups of at least 16 (the CPU executor runs it)", t->name,
                       (unsigned long long)p->g);
    case HC_GPU_FP4_DIVISOR:
        return hc__fail(err, HC_UNSUPPORTED, "'%s': an FP4 global divisor with non-E4M3 scales "
                       "(the CPU executor runs it)", t->name);
    case HC_GPU_WIDE_K:
        return hc__fail(err, HC_UNSUPPORTED, "'%s': K = %llu columns; the GPU kernels take rows "
                       "of fewer than 2^31 (the CPU executor runs it)", t->name,
                       (unsigned long long)p->K);
    case HC_GPU_ZERO_RANGE:
        return zero_range(t, p->zero_const, NULL, err);
    case HC_GPU_RUNS: break;
    }
    return HC_OK;
}

hc_status hc__gpu_layer_zeros(const hc_tensor_info *t, const hc_tile_params *p,
                              const uint8_t *data, uint64_t len, hc_err *err) {
    hc_tile_zero_at at;
    if (hc__tile_gpu_rule_zeros(p, data, len, &at) == HC_GPU_RUNS) return HC_OK;
    return zero_range(t, at.value, &at, err);
}

hc_status hc__gpu_ref_compile(const char *arch, void **cubin, size_t *size, hc_err *err) {
    static const char *const opts[] = {"--fmad=false"}; /* (the reference: no contraction) */
    return hc__jit_compile("tile_gemm.cu", arch, opts, 1, cubin, size, err);
}

hc_status hc__gpu_kind_compile(const char *file, const char *arch, hc_gpu_kind k, unsigned diag,
                              void **cubin, size_t *size, hc_err *err) {
    char buf[5][32];
    const char *opts[5];
    snprintf(buf[0], sizeof buf[0], "-DHC_CODEC=%u", k.codec);
    snprintf(buf[1], sizeof buf[1], "-DHC_SK=%u", k.sk);
    snprintf(buf[2], sizeof buf[2], "-DHC_LGS=%u", k.lgs);
    snprintf(buf[3], sizeof buf[3], "-DHC_ZP=%u", k.zp);
    int no = 4;
    if (diag) snprintf(buf[no++], sizeof buf[0], "-DHC_GEMV_DIAG=%u", diag); /* bench builds */
    for (int i = 0; i < no; i++) opts[i] = buf[i];
    return hc__jit_compile(file, arch, opts, no, cubin, size, err);
}

/* Kernel `entry` of library lib into *k, its dynamic shared memory set for the most that
 * family f's variant v (or the grouped kernel mv) needs with any layout's chunk (a multiple of 128 bytes up to
 * HC_CHUNK_MAX; not always the largest chunk: the skinny kernels fit fewer stages of it) that
 * fits a block of g's device beside stat static bytes (hc__gpu_smem_fits, the chooser's rule:
 * on sm_86/sm_89, 99 KiB, the larger needs of t1 and t16 are the chooser's to avoid, not a
 * failed attribute that would refuse every model). */
static hc_status fetch(const hc_gpu *g, cudaLibrary_t lib, const char *entry,
                       const hc_gpu_family *f, const hc_gpu_variant *v,
                       const hc_gpu_moe_variant *mv, cudaKernel_t *k, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    char what[64];
    const hc_gpu_caps dev = hc__gpu_caps_of(g);
    size_t most = 0;
    for (uint64_t chunk = 128; chunk <= HC_CHUNK_MAX; chunk += 128) {
        size_t b = mv ? hc__gpu_moe_smem(mv, chunk) : f->smem(v, chunk);
        if (b > most && hc__gpu_smem_fits(&dev, b + (mv ? mv->stat : 0))) most = b;
    }
    CU(hc__cuda.lib_kernel(k, lib, entry), entry);
    snprintf(what, sizeof what, "shared memory of %s", entry);
    if (most) /* (none fits: the chooser never launches it here) */
        CU(hc__cuda.func_attr((const void *)*k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)most), what);
    if (mv && mv->bps > 1) /* (its blocks an SM side by side: all the shared memory there is) */
        CU(hc__cuda.func_attr((const void *)*k, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared), what);
out:
    if (st) *perr = err;
    return st;
}

hc_status hc__gpu_layer_module(hc_gpu *g, hc_gpu_kind k, int *index, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *cubin = NULL;
    size_t size = 0;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < g->nmods; i++)
        if (kind_eq(g->mods[i].kind, k)) {
            *index = i;
            goto out;
        }
    if (g->nmods == HC_MODULES) {
        st = hc__fail(&err, HC_UNSUPPORTED, "more than %d kinds of layers in one process",
                     HC_MODULES);
        goto out;
    }
    hc_gpu_module *M = &g->mods[g->nmods];
    memset(M, 0, sizeof *M);
    M->kind = k;
    st = hc__gpu_kind_compile("tile_mma.cu", g->arch, k, HC_GPU_DIAG(g), &cubin, &size, &err);
    if (st) goto out;
    CU(hc__cuda.lib_load(&M->lib, cubin, NULL, NULL, 0, NULL, NULL, 0),
       "cudaLibraryLoadData(tile_mma)");
    size_t nf = 0;
    const hc_gpu_family *fams = hc__gpu_families(&nf);
    for (size_t i = 0; i < nf; i++) {
        const hc_gpu_family *f = &fams[i];
        if (f->arch && strcmp(f->arch, g->arch)) continue; /* (the tensor-map encoder: the chooser's) */
        for (unsigned j = 0; j < f->nvar && !st; j++)
            st = fetch(g, M->lib, f->var[j].entry, f, &f->var[j], NULL, &M->k[f->var[j].id],
                       &err);
    }
    if (st) goto out;
    *index = g->nmods++;
out:
    if (st && g->nmods < HC_MODULES && g->mods[g->nmods].lib) {
        hc__cuda.lib_unload(g->mods[g->nmods].lib);
        g->mods[g->nmods].lib = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    free(cubin);
    if (st) {
        *perr = err;
        hc__err_prefix(perr, "kernels for %s tiles", codec_name(k.codec));
    }
    return st;
}

hc_status hc__gpu_moe_module(hc_gpu *g, int mod, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *cubin = NULL;
    size_t size = 0;
    pthread_mutex_lock(&g->mu);
    hc_gpu_module *M = &g->mods[mod];
    if (M->glib) goto out;
    st = hc__gpu_kind_compile("moe_gemm.cu", g->arch, M->kind, 0, &cubin, &size, &err);
    if (st) goto out;
    CU(hc__cuda.lib_load(&M->glib, cubin, NULL, NULL, 0, NULL, NULL, 0),
       "cudaLibraryLoadData(moe_gemm)");
    size_t nv = 0;
    const hc_gpu_moe_variant *mv = hc__gpu_moe_variants(&nv);
    for (size_t i = 0; i < nv && !st; i++) {
        hc_gpu_variant v;
        const hc_gpu_family *f = hc__gpu_moe_like(&mv[i], &v);
        if (!f->arch || !strcmp(f->arch, g->arch))
            st = fetch(g, M->glib, mv[i].entry, f, &v, &mv[i], &M->gk[mv[i].id],
                       &err);
    }
out:
    if (st && M->glib) {
        hc__cuda.lib_unload(M->glib);
        M->glib = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    free(cubin);
    if (st) {
        *perr = err;
        hc__err_prefix(perr, "grouped MoE kernels for %s tiles", codec_name(M->kind.codec));
    }
    return st;
}

/* resident blocks per SM of kernel k at block threads and smem bytes (2 where CUDA cannot tell) */
static unsigned occupancy_of(cudaKernel_t k, unsigned block, size_t smem) {
    int b = 0;
    if (!k || hc__cuda.occupancy(&b, (const void *)k, (int)block, smem) != cudaSuccess || b < 1)
        b = 2;
    return (unsigned)b;
}

void hc__gpu_gemv_occupancy(const hc_gpu *g, int mod, const hc_tile_params *p, unsigned occ[3]) {
    const hc_gpu_family *f = hc__gpu_kernel_family(HC_GK_GEMV_T1, NULL);
    for (unsigned i = 0; i < 3; i++) {
        const hc_gpu_variant *v = &f->var[i < f->nvar ? i : f->nvar - 1];
        occ[i] = occupancy_of(g->mods[mod].k[v->id], f->block, f->smem(v, p->chunk_bytes));
    }
}

void hc__gpu_moe_gemv_occupancy(const hc_gpu *g, int mod, uint64_t chunk, unsigned occ[3]) {
    size_t nv = 0;
    const hc_gpu_moe_variant *mv = hc__gpu_moe_variants(&nv);
    const int ids[2] = {HC_GMK_T8, HC_GMK_T16};
    for (int i = 0; i < 2; i++) {
        const hc_gpu_family *f = hc__gpu_kernel_family(mv[ids[i]].like, NULL);
        occ[i + 1] = occupancy_of(g->mods[mod].gk[ids[i]], f->block,
                                  hc__gpu_moe_smem(&mv[ids[i]], chunk));
    }
}

hc_status hc_gpu_precompile(hc_container *c, const char *arch, unsigned *built, char *msg,
                            size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    hc_gpu_kind seen[HC_MODULES];
    unsigned n = 0;
    *built = 0;
    for (size_t i = 0; i < hc_container_tensor_count(c) && !st; i++) {
        const hc_tensor_info *t = hc_container_tensor(c, i);
        hc_tile_params p;
        const int32_t *perm;
        if (!t->layout_params) continue;
        st = hc__tile_layer(c, t->name, &t, &p, &perm, &err);
        if (st) break;
        hc_gpu_kind k;
        hc_err skip = {0};
        bool dup = hc__gpu_layer_kind(t, &p, &k, &skip) != HC_OK; /* no GPU kernel: no module */
        for (unsigned j = 0; j < n && !dup; j++) dup = kind_eq(seen[j], k);
        if (dup) continue;
        if (n == HC_MODULES) {
            st = hc__fail(&err, HC_UNSUPPORTED, "more than %d kinds of layers", HC_MODULES);
            break;
        }
        seen[n++] = k;
        void *cubin = NULL;
        size_t size = 0;
        st = hc__gpu_kind_compile("tile_mma.cu", arch, k, 0, &cubin, &size, &err);
        free(cubin);
        if (st) hc__err_prefix(&err, "kernels for '%s' (%s)", t->name, codec_name(k.codec));
        else (*built)++;
    }
    /* MoE layers: the grouped kernels of every kind (a kind no expert has costs a build, not a
     * wrong answer) and the routing module, as hc_gpu_model_load builds them */
    for (unsigned j = 0; !st && hc_container_moe_count(c) && j <= n; j++) {
        void *cubin = NULL;
        size_t size = 0;
        st = j < n ? hc__gpu_kind_compile("moe_gemm.cu", arch, seen[j], 0, &cubin, &size, &err)
                   : hc__jit_compile("moe_route.cu", arch, NULL, 0, &cubin, &size, &err);
        free(cubin);
        if (st) hc__err_prefix(&err, "MoE kernels (%s)", j < n ? codec_name(seen[j].codec) : "routing");
        else (*built)++;
    }
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
