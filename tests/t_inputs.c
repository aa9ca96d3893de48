/* t_inputs.c: folder and archive inputs: names, limits, links and non-regular files. Archives
 * are made here by the real tools (tar, gzip, zstd, python3 zipfile, zip) where the machine
 * has them, and the extracted files are compared byte for byte with the folder packed. */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "test.h"

/* Runs a shell command; true when it exits 0. */
static bool sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool sh(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return n > 0 && (size_t)n < sizeof cmd && system(cmd) == 0;
}

static bool have(const char *tool) { return sh("command -v %s >/dev/null 2>&1", tool); }

/* The absolute path of a fixture (commands below change folder), to be freed. */
static char *abs_fixture(const char *rel) { return realpath(fixture(rel), NULL); }

/* The whole file, read with stdio (not with the code under test); NULL if unreadable. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            char *nb = realloc(buf, cap = cap ? 2 * cap : 65536);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + *n, 1, cap - *n, f);
        *n += r;
        if (r == 0) break;
    }
    fclose(f);
    return buf;
}

static uint64_t file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Every file of folder is in the checkpoint's root with the same bytes; returns their count
 * and total size. */
static size_t check_same_files(const hc_ckpt *c, const char *folder, uint64_t *total) {
    DIR *d = opendir(folder);
    size_t count = 0;
    *total = 0;
    CHECK(d != NULL);
    for (struct dirent *de; d && (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        char a[2048], b[2048];
        snprintf(a, sizeof a, "%s/%s", folder, de->d_name);
        snprintf(b, sizeof b, "%s/%s", c->root, de->d_name);
        size_t na = 0, nb = 0;
        char *x = slurp(a, &na), *y = slurp(b, &nb);
        if (!x || !y || na != nb || memcmp(x, y, na))
            CHECK_FAIL_("'%s' extracted as '%s' differs", a, b);
        free(x), free(y);
        count++;
        *total += na;
    }
    if (d) closedir(d);
    return count;
}

/* Opens src (no options: the defaults); on success checks it holds exactly the files of
 * folder with their bytes, and returns the checkpoint (closed by the caller). */
static hc_ckpt *open_like(const char *src, const char *folder, const hc_ckpt_opts *o) {
    hc_ckpt *c = NULL;
    hc_err err = {0};
    if (hc__ckpt_open_opts(src, o, &c, &err)) {
        CHECK_FAIL_("open '%s': %s", src, err.msg);
        return NULL;
    }
    uint64_t total;
    size_t n = check_same_files(c, folder, &total);
    CHECK_EQ_U64(c->nextra + c->nshards + (c->index_name != NULL), n);
    return c;
}

static void expect_refused(const char *src, const hc_ckpt_opts *o, const char *n1,
                           const char *n2, const char *n3) {
    hc_ckpt *c = NULL;
    hc_err err = {0};
    hc_status st = hc__ckpt_open_opts(src, o, &c, &err);
    if (st == HC_OK) CHECK_FAIL_("'%s' was accepted", src);
    CHECK(c == NULL);
    if (n1) CHECK_CONTAINS(err.msg, n1);
    if (n2) CHECK_CONTAINS(err.msg, n2);
    if (n3) CHECK_CONTAINS(err.msg, n3);
    hc__ckpt_close(c);
}

/* The way people pack a folder: `tar -C dir .` ("./" and "./name" entries), a folder
 * prefix, gzip and zstd filters, python's zipfile (folder entries) and zip -r. */
static void test_archives_made_by_tools(void) {
    char *sharded = abs_fixture("ckpt/sharded"), *ckdir = abs_fixture("ckpt");
    const char *t = test_tmpdir();
    struct {
        const char *tool, *name, *cmd, *what;
        bool from_parent; /* run in ckpt/ rather than in ckpt/sharded/ */
    } cases[] = {
        {"tar", "dot.tar", "tar -cf", ".", false},
        {"gzip", "dot.tar.gz", "tar -czf", ".", false},
        {"zstd", "dot.tar.zst", "tar --zstd -cf", ".", false},
        {"tar", "prefix.tar", "tar -cf", "sharded", true},
        {"python3", "py.zip", "python3 -m zipfile -c", "sharded/", true},
        {"zip", "dot.zip", "zip -qr", ".", false},
    };
    for (size_t i = 0; sharded && ckdir && i < sizeof cases / sizeof cases[0]; i++) {
        if (!have(cases[i].tool) || !have("tar")) {
            printf("  note: %s not found, '%s' not tested\n", cases[i].tool, cases[i].name);
            continue;
        }
        char src[1024];
        snprintf(src, sizeof src, "%s/%s", t, cases[i].name);
        if (!sh("cd '%s' && %s '%s' %s", cases[i].from_parent ? ckdir : sharded, cases[i].cmd,
                src, cases[i].what)) {
            CHECK_FAIL_("cannot make '%s'", cases[i].name);
            continue;
        }
        hc_ckpt *c = open_like(src, sharded, NULL);
        if (c) CHECK_EQ_U64(c->nentries, 21);
        hc__ckpt_close(c);
    }
    free(sharded);
    free(ckdir);
}

/* Names are normalised, then compared: "./" and "." are folders, "./a" is "a" (so "./a"
 * and "a" are one name twice); '..', long names and deep names stay refused. */
static void test_entry_names(void) {
    char *single = abs_fixture("ckpt/single");
    hc_ckpt *c = single ? open_like(fixture("archives/dot_entries.tar"), single, NULL) : NULL;
    if (c) CHECK_EQ_U64(c->nentries, 21);
    hc__ckpt_close(c);
    free(single);
    const char *tmp = test_tmpdir();
    char *old = getenv("TMPDIR") ? hc__strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    expect_refused(fixture("archives/evil_dup.tar"), NULL, "evil_dup.tar",
                   "entry 'config.json' appears twice", NULL);
    expect_refused(fixture("archives/evil_inner_dotdot.tar"), NULL, "sub/../../../escape.txt",
                   "unsafe name", "'..'");
    expect_refused(fixture("archives/evil_long_part.tar"), NULL, "nnnn.json", "unsafe name",
                   "longer than 255 bytes");
    expect_refused(fixture("archives/evil_deep.tar"), NULL, "d/d/x.json", "unsafe name",
                   "more than 32 levels");
    hc_ckpt_opts roomy = {.max_extract_ratio = 1000000}; /* past the per-file charge */
    expect_refused(fixture("archives/evil_many_entries.tar.zst"), &roomy, "evil_many_entries",
                   "more than 100000 entries", NULL);
    DIR *d = opendir(tmp);
    int left = 0;
    for (struct dirent *de; d && (de = readdir(d));) left += de->d_name[0] != '.';
    if (d) closedir(d);
    CHECK_EQ_INT(left, 0); /* every extraction folder removed */
    char up[700];
    snprintf(up, sizeof up, "%s/../escape.txt", tmp);
    CHECK(access(up, F_OK) != 0);
    if (old) setenv("TMPDIR", old, 1);
    else unsetenv("TMPDIR");
    free(old);
}

/* The cap on extracted bytes: 100 times the archive by default, both limits settable, the
 * message naming the archive, the entry, the limit and the flag that raises it. */
static void test_extract_limits(void) {
    const char *bombs[] = {"archives/bomb.zip", "archives/bomb.tar.zst"};
    for (int i = 0; i < 2; i++) {
        char limit[64];
        snprintf(limit, sizeof limit, "limit of %llu bytes",
                 (unsigned long long)file_size(fixture(bombs[i])) * 100);
        expect_refused(fixture(bombs[i]), NULL, "bomb/tokenizer.json", limit,
                       "raise it with --max-extract-ratio");
        hc_ckpt_opts big = {.max_extract_ratio = 100000};
        hc_ckpt *c = NULL;
        hc_err err = {0};
        CHECK_EQ_INT(hc__ckpt_open_opts(fixture(bombs[i]), &big, &c, &err), HC_OK);
        if (c) {
            char path[2048];
            snprintf(path, sizeof path, "%s/tokenizer.json", c->root);
            CHECK_EQ_U64(file_size(path), 8 << 20);
            CHECK_EQ_U64(c->nentries, 1);
        }
        hc__ckpt_close(c);
    }
    /* sharded.tar.zst (the folder "sharded/" and its files) costs the bytes of the folder it
     * was made from, 512 per file and 4096 for the folder (docs/inputs.md) */
    char *sharded = abs_fixture("ckpt/sharded");
    uint64_t total = 4096;
    DIR *d = sharded ? opendir(sharded) : NULL;
    for (struct dirent *de; d && (de = readdir(d));) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", sharded, de->d_name);
        if (de->d_name[0] != '.') total += file_size(p) + 512;
    }
    if (d) closedir(d);
    const char *zst = fixture("archives/sharded.tar.zst");
    CHECK(total > file_size(zst)); /* so that a ratio of 1 is too small */
    hc_ckpt_opts exact = {.max_extract_bytes = total}, less = {.max_extract_bytes = total - 1};
    hc_ckpt *c = sharded ? open_like(zst, sharded, &exact) : NULL;
    hc__ckpt_close(c);
    char want[64];
    snprintf(want, sizeof want, "limit of %llu bytes", (unsigned long long)total - 1);
    expect_refused(zst, &less, "sharded.tar.zst", want, "raise it with --max-extract-bytes");
    hc_ckpt_opts one = {.max_extract_ratio = 1};
    expect_refused(zst, &one, "sharded/", "1 times the archive's",
                   "raise it with --max-extract-ratio");
    free(sharded);
}

/* A sparse entry is written sparsely, its full length kept (the trailing hole included), and
 * counted at its logical size against the cap. */
static void test_sparse_entry(void) {
    if (!have("tar")) {
        printf("  note: tar not found, sparse entries not tested\n");
        return;
    }
    const char *t = test_tmpdir();
    char *single = abs_fixture("ckpt/single");
    char dir[1024], tok[1100], tar[1100];
    snprintf(dir, sizeof dir, "%s/ck", t);
    snprintf(tok, sizeof tok, "%s/tokenizer.json", dir);
    snprintf(tar, sizeof tar, "%s/sparse.tar", t);
    const uint64_t logical = 64ull << 20, at = 1 << 20;
    FILE *f = NULL;
    if (!single || !sh("cp -r '%s' '%s'", single, dir) || !(f = fopen(tok, "r+b")) ||
        truncate(tok, (off_t)logical) != 0 || fseek(f, (long)at, SEEK_SET) != 0 ||
        fwrite("hello", 1, 5, f) != 5 || fclose(f) != 0 ||
        !sh("tar -S -cf '%s' -C '%s' ck", tar, t)) {
        CHECK_FAIL_("cannot make '%s'", tar);
        free(single);
        return;
    }
    free(single);
    expect_refused(tar, NULL, "entry 'ck/tokenizer.json'", "--max-extract-ratio", NULL);
    hc_ckpt_opts o = {.max_extract_ratio = 1000};
    hc_ckpt *c = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__ckpt_open_opts(tar, &o, &c, &err), HC_OK);
    if (!c) return;
    char out[2048];
    snprintf(out, sizeof out, "%s/tokenizer.json", c->root);
    struct stat src, sb;
    CHECK(stat(tok, &src) == 0 && stat(out, &sb) == 0);
    CHECK_EQ_U64(sb.st_size, logical);
    if ((uint64_t)src.st_blocks * 512 < logical / 2) /* the file system keeps holes */
        CHECK((uint64_t)sb.st_blocks * 512 < logical / 2);
    char buf[6] = {0};
    FILE *g = fopen(out, "rb");
    CHECK(g && fseek(g, (long)at - 1, SEEK_SET) == 0 && fread(buf, 1, 6, g) == 6);
    CHECK(memcmp(buf, "\0hello", 6) == 0);
    if (g) CHECK(fseek(g, (long)logical - 1, SEEK_SET) == 0 && fgetc(g) == 0);
    if (g) fclose(g);
    hc__ckpt_close(c);
}

/* Folders cost 4096 bytes each against the extraction limit and count as entries, whether
 * the archive names them or they are only parents of a file: 40 empty files 20 levels deep
 * (800 folders, 3.2 MB) must not pass a 64 KiB limit. */
static void test_folder_bomb(void) {
    if (!have("tar")) {
        printf("  note: tar not found, folder bombs not tested\n");
        return;
    }
    const char *t = test_tmpdir();
    char explicit[1100], implicit[1100];
    snprintf(explicit, sizeof explicit, "%s/dirs.tar", t);
    snprintf(implicit, sizeof implicit, "%s/parents.tar", t);
    CHECK(sh("cd '%s' && mkdir b && cd b && for i in $(seq 40); do "
             "p=d$i/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s; mkdir -p $p && : > $p/x.json; done && "
             "tar -cf '%s' . && find . -type f | tar -cf '%s' --no-recursion -T -",
             t, explicit, implicit));
    hc_ckpt_opts small = {.max_extract_bytes = 64 << 10};
    expect_refused(explicit, &small, "dirs.tar", "limit of 65536 bytes", "--max-extract-bytes");
    expect_refused(implicit, &small, "parents.tar", "limit of 65536 bytes", "/a/b/");
}

/* A name used as a file and as a folder is refused in both orders (file 'x.json' then folder
 * 'x.json/', and the reverse); the tar is written entry by entry with python's tarfile. */
static void test_file_folder_clash(void) {
    if (!have("python3")) {
        printf("  note: python3 not found, name clashes not tested\n");
        return;
    }
    const char *orders[] = {"fd", "df"};
    for (int i = 0; i < 2; i++) {
        char tar[1100];
        snprintf(tar, sizeof tar, "%s/clash_%s.tar", test_tmpdir(), orders[i]);
        CHECK(sh("python3 -c 'import io, sys, tarfile\n"
                 "t = tarfile.open(sys.argv[1], \"w\")\n"
                 "for k in sys.argv[2]:\n"
                 "    e = tarfile.TarInfo(\"ck/x.json\")\n"
                 "    if k == \"d\": e.type = tarfile.DIRTYPE\n"
                 "    else: e.size = 2\n"
                 "    t.addfile(e, io.BytesIO(b\"{}\") if k == \"f\" else None)\n"
                 "t.close()' '%s' %s", tar, orders[i]));
        expect_refused(tar, NULL, "entry 'ck/x.json'", "as both a file and a folder", NULL);
    }
}

/* An index of 30,000 tensors whose shard holds one more is refused quickly, naming it: the
 * shards -> index check must not search the weight map once per tensor (listed in reverse
 * order, such a search would walk most of the map every time). */
static void test_index_many_names(void) {
    const char *dir = test_tmpdir();
    if (!have("python3")) {
        printf("  note: python3 not found, large indexes not tested\n");
        return;
    }
    CHECK(sh("cd '%s' && python3 -c 'import json, struct\n"
             "names = [\"model.layers.0.mlp.experts.t%%05d\" %% i for i in range(30001)]\n"
             "h = json.dumps({n: {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [0, 0]} "
             "for n in names}).encode()\n"
             "open(\"model-1.safetensors\", \"wb\").write(struct.pack(\"<Q\", len(h)) + h)\n"
             "wm = {n: \"model-1.safetensors\" for n in reversed(names[:-1])}\n"
             "json.dump({\"weight_map\": wm}, open(\"model.safetensors.index.json\", \"w\"))'",
             dir));
    struct timespec a, b; /* CPU time: a loaded machine does not make it flake (before: 2-3 s) */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    expect_refused(dir, NULL, "holds tensor 'model.layers.0.mlp.experts.t30000', which the "
                   "index does not list", "model-1.safetensors", NULL);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    if (s >= 1.0) CHECK_FAIL_("refusing took %.2f s of CPU", s);
}

/* A copy of a fixture folder in a fresh temporary folder (static buffer). */
static const char *copy_folder(const char *rel) {
    static char dir[1024];
    char *src = abs_fixture(rel);
    snprintf(dir, sizeof dir, "%s/ck", test_tmpdir());
    bool ok = src && sh("cp -r '%s' '%s'", src, dir);
    free(src);
    if (!ok) CHECK_FAIL_("cannot copy '%s'", rel);
    return ok ? dir : NULL;
}

/* name in dir replaced by a FIFO: opening the folder must fail at once, naming it. */
static void expect_fifo_refused(const char *rel, const char *name) {
    const char *dir = copy_folder(rel);
    char path[1200];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(unlink(path) == 0 || access(path, F_OK) != 0);
    CHECK(mkfifo(path, 0600) == 0);
    expect_refused(dir, NULL, name, "FIFO", "not a regular file");
}

/* Every file read from a folder is checked as a regular file before it is opened: a FIFO
 * would block the open forever (alarm() turns a hang into a failure). */
static void test_fifo_members(void) {
    alarm(30);
    expect_fifo_refused("ckpt/sharded", "config.json");
    expect_fifo_refused("ckpt/sharded", "model-00002-of-00003.safetensors");
    expect_fifo_refused("ckpt/sharded", "model.safetensors.index.json");
    expect_fifo_refused("ckpt/sharded", "quantize_config.json");
    expect_fifo_refused("ckpt/single", "model.safetensors");
    /* a side file that is a FIFO is left out, with a warning */
    const char *dir = copy_folder("ckpt/single");
    char path[1200];
    if (dir) {
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0);
        hc_ckpt *c = NULL;
        hc_err err = {0};
        CHECK_EQ_INT(hc__ckpt_open(dir, &c, &err), HC_OK);
        bool listed = false, warned = false;
        for (size_t i = 0; c && i < c->nextra; i++)
            listed |= !strcmp(c->extra_files[i], "tokenizer.json");
        for (size_t i = 0; c && i < c->nwarnings; i++)
            warned |= strstr(c->warnings[i], "tokenizer.json") && strstr(c->warnings[i], "FIFO");
        CHECK(c && !listed && warned && c->nextra == 4);
        hc__ckpt_close(c);
    }
    alarm(0);
}

/* Links that stay inside the checkpoint folder are followed; one that leaves it, or a file
 * hconvert reads that points nowhere, is refused, naming the link and its target. */
static void test_links(void) {
    const char *dir = copy_folder("ckpt/single");
    if (!dir) return;
    char d[1024], p[1200], outside[1200];
    snprintf(d, sizeof d, "%s", dir);
    snprintf(outside, sizeof outside, "%s/../outside.json", d);
    FILE *f = fopen(outside, "w");
    CHECK(f && fputs("{\"secret\": 1}\n", f) >= 0 && fclose(f) == 0);
    /* inside: an alias of a side file, the shard moved into a subfolder, a link to a folder */
    CHECK(sh("cd '%s' && mkdir sub && mv model.safetensors sub/ && "
             "ln -s sub/model.safetensors model.safetensors && ln -s tokenizer.json alias.json && "
             "ln -s / root_link", d));
    hc_ckpt *c = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__ckpt_open(d, &c, &err), HC_OK);
    bool alias = false;
    for (size_t i = 0; c && i < c->nextra; i++) alias |= !strcmp(c->extra_files[i], "alias.json");
    CHECK(c && alias && c->nentries == 21 && c->nextra == 6);
    size_t nextra = c ? c->nextra : 0;
    hc__ckpt_close(c);
    /* leaving: a side file, config.json, through '..'; dangling: a shard, config.json */
    const char *cases[][3] = { /* link, its target (NULL: the outside file), the reason */
        {"notes.json", NULL, "outside.json"},
        {"config.json", NULL, "outside.json"},
        {"extra.json", "../ck/../outside.json", "outside.json"},
        {"model.safetensors", "nowhere.safetensors", "cannot be resolved"},
        {"config.json", "nowhere.json", "cannot be resolved"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", d, cases[i][0]);
        unlink(p);
        CHECK(symlink(cases[i][1] ? cases[i][1] : outside, p) == 0);
        char want[1300];
        snprintf(want, sizeof want, "link '%s' points to", p);
        expect_refused(d, NULL, want, cases[i][2], i < 3 ? "outside the checkpoint" : NULL);
        unlink(p);
    }
    /* a dangling side file is left out with a warning, like a FIFO */
    CHECK(sh("cd '%s' && ln -s sub/model.safetensors model.safetensors", d));
    snprintf(p, sizeof p, "%s/gone.json", d);
    CHECK(symlink("nowhere.json", p) == 0);
    c = NULL;
    CHECK_EQ_INT(hc__ckpt_open(d, &c, &err), HC_OK);
    bool listed = false, warned = false;
    for (size_t i = 0; c && i < c->nextra; i++) listed |= !strcmp(c->extra_files[i], "gone.json");
    for (size_t i = 0; c && i < c->nwarnings; i++)
        warned |= strstr(c->warnings[i], "gone.json") && strstr(c->warnings[i], "left out");
    CHECK(c && !listed && warned);
    CHECK_EQ_U64(c ? c->nextra : 0, nextra - 1); /* config.json was removed above */
    hc__ckpt_close(c);
}

/* A Hugging Face cache snapshot (hub/models--ORG--NAME/snapshots/REV) links every file to
 * ../../blobs/HASH: those links are accepted; one leaving the repository's blobs is not. */
static void test_hf_cache_snapshot(void) {
    char *src = abs_fixture("ckpt/single");
    const char *hub = test_tmpdir();
    char snap[1200];
    snprintf(snap, sizeof snap, "%s/models--org--name/snapshots/0123abcd", hub);
    CHECK(src && sh("cd '%s' && mkdir -p models--org--name/blobs models--org--name/snapshots/0123abcd"
                    " && for f in '%s'/*; do h=$(sha256sum \"$f\" | cut -c1-40); cp \"$f\" "
                    "models--org--name/blobs/$h; ln -s ../../blobs/$h "
                    "models--org--name/snapshots/0123abcd/$(basename \"$f\"); done",
                    hub, src ? src : "/nonexistent"));
    hc_ckpt *c = NULL;
    hc_err err = {0};
    if (hc__ckpt_open(snap, &c, &err)) CHECK_FAIL_("snapshot refused: %s", err.msg);
    CHECK(c && c->nentries == 21);
    hc__ckpt_close(c);
    /* the same links outside a "snapshots" folder leave the checkpoint */
    char moved[1300];
    snprintf(moved, sizeof moved, "%s/models--org--name/other", hub);
    CHECK(sh("mv '%s' '%s/models--org--name/snapshots/x' && mkdir -p '%s' && "
             "mv '%s/models--org--name/snapshots/x' '%s/rev'", snap, hub, moved, hub, moved));
    snprintf(moved + strlen(moved), sizeof moved - strlen(moved), "/rev");
    expect_refused(moved, NULL, "outside the checkpoint", "blobs", NULL);
    free(src);
}

/* More tensors than the checkpoint limit (HC_CKPT_MAX_TENSORS, here lowered through the
 * option) are refused at the shard that passes it, naming it and the limit. */
static void test_tensor_limit(void) {
    const char *dir = test_tmpdir();
    char path[600], hdr[2048] = "{";
    for (int i = 0; i < 11; i++)
        snprintf(hdr + strlen(hdr), sizeof hdr - strlen(hdr), "%s\"t%d\":{\"dtype\":\"U8\","
                 "\"shape\":[0],\"data_offsets\":[0,0]}", i ? "," : "", i);
    strcat(hdr, "}");
    snprintf(path, sizeof path, "%s/many.safetensors", dir);
    FILE *f = fopen(path, "wb");
    uint64_t n = strlen(hdr);
    CHECK(f && fwrite(&n, 8, 1, f) == 1 && fwrite(hdr, 1, n, f) == n && fclose(f) == 0);
    hc_ckpt_opts o = {.max_tensors = 10};
    expect_refused(path, &o, "many.safetensors", "more than 10 tensors", "(11)");
    o.max_tensors = 11;
    hc_ckpt *c = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__ckpt_open_opts(path, &o, &c, &err), HC_OK);
    CHECK(c && c->nentries == 11);
    hc__ckpt_close(c);
}

void suite_inputs(void) {
    RUN(test_archives_made_by_tools);
    RUN(test_entry_names);
    RUN(test_extract_limits);
    RUN(test_sparse_entry);
    RUN(test_folder_bomb);
    RUN(test_file_folder_clash);
    RUN(test_index_many_names);
    RUN(test_fifo_members);
    RUN(test_links);
    RUN(test_hf_cache_snapshot);
    RUN(test_tensor_limit);
}
