/* t_checkpoint.c: folders, shard indexes, configs and archives (tar, tar.gz, tar.zst, zip),
 * including hostile archives and broken indexes. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "test.h"

static hc_ckpt *open_ok(const char *rel) {
    hc_ckpt *c = NULL;
    hc_err err = {0};
    hc_status st = hc__ckpt_open(fixture(rel), &c, &err);
    if (st) CHECK_FAIL_("open %s: %s", rel, err.msg);
    return c;
}

static void expect_refused(const char *rel, hc_status want, const char *needle1,
                           const char *needle2) {
    hc_ckpt *c = NULL;
    hc_err err = {0};
    hc_status st = hc__ckpt_open(fixture(rel), &c, &err);
    if (st != want) CHECK_FAIL_("%s: status %s, expected %s (%s)", rel, hc_status_name(st),
                                hc_status_name(want), err.msg);
    CHECK(c == NULL);
    if (needle1) CHECK_CONTAINS(err.msg, needle1);
    if (needle2) CHECK_CONTAINS(err.msg, needle2);
    hc__ckpt_close(c);
}

static void test_sharded_folder(void) {
    hc_ckpt *c = open_ok("ckpt/sharded");
    if (!c) return;
    CHECK_EQ_U64(c->nshards, 3);
    CHECK_EQ_U64(c->nentries, 21);
    CHECK_STR_EQ(c->index_name, "model.safetensors.index.json");
    for (size_t i = 1; i < c->nentries; i++) CHECK(strcmp(c->entries[i - 1].name, c->entries[i].name) < 0);
    const hc_ck_entry *e = hc__ckpt_find(c, "model.norm.weight");
    CHECK(e && e->t->ndim == 1 && e->t->shape[0] == 64);
    CHECK(hc__ckpt_find(c, "model.nope") == NULL);
    CHECK(c->config != NULL);
    CHECK(c->config_text && strstr(c->config_text, "9007199254740993")); /* verbatim */
    CHECK_STR_EQ(c->quant_config_name, "quantize_config.json");
    int64_t hs = 0;
    hc_err err = {0};
    CHECK_EQ_INT(hc__cfg_int(c->config, "config.json", "hidden_size", 1, 1 << 20, &hs, &err), HC_OK);
    CHECK_EQ_INT(hs, 64);
    CHECK_EQ_INT(hc__cfg_int(c->config, "config.json", "hidden_size", 128, 256, &hs, &err),
                 HC_INVALID);
    CHECK_CONTAINS(err.msg, "hidden_size");
    hc_err e3 = {0};
    CHECK_EQ_INT(hc__cfg_int(c->config, "config.json", "big_int", 0, INT64_MAX, &hs, &e3), HC_INVALID);
    bool warned = false;
    for (size_t i = 0; i < c->nwarnings; i++) warned |= strstr(c->warnings[i], "big_int") != NULL;
    CHECK(warned);
    CHECK_EQ_U64(c->nextra, 6); /* config, generation_config, quantize_config, 3 tokenizer files */
    hc__ckpt_close(c);
}

static void test_single_file_and_folder(void) {
    hc_ckpt *c = open_ok("ckpt/single/model.safetensors");
    if (c) {
        CHECK(c->is_single_file);
        CHECK_EQ_U64(c->nshards, 1);
        CHECK_EQ_U64(c->nentries, 21);
    }
    hc__ckpt_close(c);
    c = open_ok("ckpt/single");
    if (c) CHECK(c->index_name == NULL && c->nshards == 1 && c->config != NULL);
    hc__ckpt_close(c);
}

/* The same checkpoint read from an archive holds the same bytes as read from the folder. */
static void compare_with_folder(const char *archive_rel) {
    hc_ckpt *a = open_ok(archive_rel), *f = open_ok("ckpt/sharded");
    hc_err err = {0};
    if (a && f) {
        CHECK(a->is_archive);
        CHECK_EQ_U64(a->nentries, f->nentries);
        CHECK_EQ_INT(hc__ckpt_map(a, &err), HC_OK);
        CHECK_EQ_INT(hc__ckpt_map(f, &err), HC_OK);
        for (size_t i = 0; i < a->nentries && i < f->nentries; i++) {
            CHECK_STR_EQ(a->entries[i].name, f->entries[i].name);
            uint64_t n = a->entries[i].t->end - a->entries[i].t->begin;
            CHECK(memcmp(hc__ckpt_data(a, &a->entries[i]), hc__ckpt_data(f, &f->entries[i]), n) == 0);
        }
        CHECK_EQ_U64(a->nextra, f->nextra);
        CHECK(a->config != NULL);
    }
    char *tmp = a && a->tmpdir ? hc__strdup(a->tmpdir) : NULL;
    CHECK(tmp != NULL);
    hc__ckpt_close(a);
    hc__ckpt_close(f);
    struct stat sb;
    if (tmp) CHECK(stat(tmp, &sb) != 0); /* extraction folder removed at close */
    free(tmp);
}

static void test_archives(void) {
    compare_with_folder("archives/sharded.tar");
    compare_with_folder("archives/sharded.tar.gz");
    compare_with_folder("archives/sharded.tar.zst");
    compare_with_folder("archives/sharded.zip");
    hc_ckpt *c = open_ok("archives/flat.tar");
    if (c) CHECK_EQ_U64(c->nentries, 21);
    hc__ckpt_close(c);
}

static bool dir_is_empty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

static void test_hostile_archives(void) {
    /* extraction happens under TMPDIR: point it at an empty folder and check it stays so */
    const char *tmp = test_tmpdir();
    char *old = getenv("TMPDIR") ? hc__strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    expect_refused("archives/evil_dotdot.tar", HC_INVALID, "../../escape.txt", "unsafe");
    expect_refused("archives/evil_abs.tar", HC_INVALID, "/tmp/hconvert-evil-abs.txt", "unsafe");
    expect_refused("archives/evil_symlink.tar", HC_INVALID, "model/model.safetensors", "link");
    expect_refused("archives/not_an_archive.tar.gz", HC_INVALID, "not_an_archive.tar.gz", NULL);
    CHECK(dir_is_empty(tmp));
    char up[700];
    snprintf(up, sizeof up, "%s/../escape.txt", tmp);
    CHECK(access(up, F_OK) != 0);
    CHECK(access("/tmp/hconvert-evil-abs.txt", F_OK) != 0);
    if (old) setenv("TMPDIR", old, 1);
    else unsetenv("TMPDIR");
    free(old);
}

static void test_bad_indexes(void) {
    expect_refused("ckpt/bad_index_missing", HC_INVALID, "model.extra.weight", "lacks");
    expect_refused("ckpt/bad_index_unlisted", HC_INVALID, "model.hidden.weight", "does not list");
    expect_refused("ckpt/bad_index_twice", HC_INVALID, "model.dup.weight", "two shards");
    expect_refused("ckpt/bad_index_noshard", HC_INVALID, "model-00009-of-00009.safetensors",
                   "does not exist");
    expect_refused("ckpt/bad_index_path", HC_INVALID, "../evil.safetensors", "plain file name");
    expect_refused("ckpt/bad_config", HC_INVALID, "config.json", "JSON");
    expect_refused("ckpt/does_not_exist", HC_IO, "does_not_exist", NULL);
    expect_refused("corrupt", HC_INVALID, NULL, NULL); /* first bad shard stops the folder */
}

void suite_checkpoint(void) {
    RUN(test_sharded_folder);
    RUN(test_single_file_and_folder);
    RUN(test_archives);
    RUN(test_hostile_archives);
    RUN(test_bad_indexes);
}
