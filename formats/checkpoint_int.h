/* checkpoint_int.h: what the parts of the checkpoint reader share. checkpoint.c opens a source
 * (folder, single file, container, archive) and closes it; checkpoint_files.c lists the folder
 * and checks each file it reads or copies; checkpoint_shards.c opens the shards and the index;
 * checkpoint_json.c reads the JSON configs; checkpoint_archive.c extracts an archive. Internal
 * to formats/checkpoint*.c; other folders use checkpoint.h. */
#ifndef HC_CHECKPOINT_INT_H
#define HC_CHECKPOINT_INT_H

#include <stdbool.h>
#include <string.h>

#include "checkpoint.h"

#define INDEX_NAME "model.safetensors.index.json"

/* checkpoint.c: a warning kept with the checkpoint (dropped when there is no memory for it) */
void hc__ck_warn(hc_ckpt *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* checkpoint_files.c */
hc_status hc__ck_set_root_real(hc_ckpt *c, hc_err *err);
hc_status hc__ck_check_member(const hc_ckpt *c, const char *name, hc_err *err);
hc_status hc__ck_list_dir(hc_ckpt *c, char ***names, size_t *count, hc_err *err);
hc_status hc__ck_keep_side_files(hc_ckpt *c, char **names, size_t n, hc_err *err);

/* checkpoint_shards.c */
hc_status hc__ck_add_shard(hc_ckpt *c, const char *file, hc_err *err);
int hc__ck_cmp_entry(const void *a, const void *b);
hc_status hc__ck_build_entries(hc_ckpt *c, hc_err *err);
hc_status hc__ck_load_index(hc_ckpt *c, hc_err *err);
bool hc__ck_is_shard(const hc_ckpt *c, const char *name);

/* checkpoint_json.c */
hc_status hc__ck_load_configs(hc_ckpt *c, hc_err *err);

/* checkpoint_archive.c */
hc_status hc__ck_extract(hc_ckpt *c, const char *src, const hc_ckpt_opts *o, hc_err *err);

#endif
