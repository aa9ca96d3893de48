/* checkpoint.h: a Hugging Face checkpoint as a set of safetensors shards plus its JSON
 * configs, read from a folder, a single file, or an archive (extracted to a private folder). */
#ifndef HC_CHECKPOINT_H
#define HC_CHECKPOINT_H

#include <cjson/cJSON.h>

#include "safetensors.h"

/* A file's identity (st_dev, st_ino). */
typedef struct {
    uint64_t dev, ino;
} hc_file_id;

typedef struct {
    const char *name;
    size_t shard;
    const hc_st_tensor *t;
    const void *data; /* bytes held elsewhere (a container), or NULL: in shard `shard` */
    const hc_tensor_info *info; /* the container's description, or NULL */
} hc_ck_entry;

/* What opening a checkpoint may cost (docs/inputs.md). An archive may extract at most
 * min(max_extract_bytes, max_extract_ratio x the archive's size) bytes, all entries together,
 * each entry counted at its logical size (a sparse file's holes included). Zero fields take
 * the defaults. */
typedef struct {
    uint64_t max_extract_bytes; /* 0: HC_EXTRACT_MAX_BYTES */
    uint64_t max_extract_ratio; /* 0: HC_EXTRACT_MAX_RATIO */
    uint64_t max_tensors;       /* 0: HC_CKPT_MAX_TENSORS (tensors of all shards together) */
} hc_ckpt_opts;

#define HC_EXTRACT_MAX_BYTES (2ull << 40) /* 2 TiB */
/* Tensors in all shards together: about 3.5 times the largest real checkpoint (a GPTQ Kimi K2:
 * 61 layers x 384 experts x 3 projections x 4 tensors); validate and convert keep a few
 * hundred bytes per tensor. */
#define HC_CKPT_MAX_TENSORS 1000000u
#define HC_EXTRACT_MAX_RATIO 100ull

typedef struct {
    char *src;    /* as given by the user */
    char *root;   /* folder the files are read from */
    char *root_real; /* its realpath: links must resolve below it (NULL for a single file) */
    char *cache_blobs; /* a Hugging Face cache snapshot's "../../blobs", where its links may
                        * also resolve (NULL when root is not such a snapshot) */
    char *tmpdir; /* extraction folder removed at close, or NULL */
    uint64_t max_tensors; /* hc_ckpt_opts' */
    uint64_t ntensors;    /* tensors of the shards opened so far, against max_tensors */
    int is_archive, is_single_file, is_container;
    hc_container *container;  /* when reading a container written by convert */
    hc_st_tensor *ct_tensors; /* its tensors, described as safetensors entries */
    void **owned;             /* decoded zstd tensors */
    size_t nowned;
    char *index_name; /* NULL when there is no index */
    uint64_t index_total_size; /* metadata.total_size, 0 when absent */
    hc_st_file **shards;
    size_t nshards;
    hc_ck_entry *entries; /* every tensor, sorted by name */
    size_t nentries;
    cJSON *config;           /* config.json, or NULL */
    char *config_text;       /* verbatim text */
    size_t config_len;
    cJSON *quant_config;     /* quantize_config.json or quant_config.json, or NULL */
    char *quant_config_name;
    char **extra_files;      /* non-weight files in root, sorted */
    hc_file_id *extra_ids;   /* the file each resolved to when it was checked: a copy must open
                              * that same file (a link swapped in later is refused) */
    size_t nextra;
    char **warnings;
    size_t nwarnings;
} hc_ckpt;

/* Opens src with the default limits (hc__ckpt_open_opts with NULL options). */
hc_status hc__ckpt_open(const char *src, hc_ckpt **out, hc_err *err);
hc_status hc__ckpt_open_opts(const char *src, const hc_ckpt_opts *o, hc_ckpt **out, hc_err *err);
void hc__ckpt_close(hc_ckpt *c);
const hc_ck_entry *hc__ckpt_find(const hc_ckpt *c, const char *name);
/* Maps every shard's data (needed before reading tensor bytes). */
hc_status hc__ckpt_map(hc_ckpt *c, hc_err *err);
const void *hc__ckpt_data(const hc_ckpt *c, const hc_ck_entry *e);
/* Drops a tensor's pages from this process (MADV_DONTNEED on the pages wholly inside it). */
void hc__ckpt_release(const hc_ckpt *c, const hc_ck_entry *e);

/* Reads a JSON file (bounded size, valid UTF-8, an object, no duplicate keys at any level). */
hc_status hc__json_load(const char *path, cJSON **out, char **text, size_t *len, hc_err *err);
/* The same checks on JSON text held in memory; name is used in messages. */
hc_status hc__json_parse(const char *data, size_t n, const char *name, cJSON **out, hc_err *err);
/* Integer member of a config: present, an integer, within [lo, hi]. */
hc_status hc__cfg_int(const cJSON *cfg, const char *file, const char *key, int64_t lo, int64_t hi,
                     int64_t *out, hc_err *err);

/* Archive extraction (archive.c): tar, tar.gz, tar.zst, tar.xz, tar.bz2, tar.lz4, zip, into
 * the empty folder dest, within o's limits (NULL: the defaults). */
hc_status hc__archive_extract(const char *archive, const char *dest, const hc_ckpt_opts *o,
                             hc_err *err);
hc_status hc__remove_tree(const char *path);

#endif
