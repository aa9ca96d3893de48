/* t_faults.c: convert under faults: stale temp files, a lock on OUT, failures while writing,
 * and the side-file copy (sparse, bounded, never blocking). What OUT must hold afterwards is
 * read back with readdir/stat here, not through the code under test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "checkpoint.h"
#include "hconvert.h"
#include "test.h"

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir (without . and ..), sorted, joined by ','; "" for none or no folder. */
static const char *listing(const char *dir) {
    static char out[4096];
    char *names[256];
    size_t n = 0;
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return out;
    for (struct dirent *de; n < 256 && (de = readdir(d));)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "," : "", names[i]);
        free(names[i]);
    }
    return out;
}

static void touch(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
}

static uint64_t file_size(const char *dir, const char *name) {
    char p[1024];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Side files of a fixture folder (what is not weights), counted independently of convert. */
static uint64_t side_files(const char *dir) {
    uint64_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        n += de->d_name[0] != '.' && !(l > 12 && !strcmp(de->d_name + l - 12, ".safetensors")) &&
             strcmp(de->d_name, "model.safetensors.index.json");
    }
    if (d) closedir(d);
    return n;
}

static ino_t inode(const char *dir, const char *name) {
    char p[1024];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0 ? sb.st_ino : 0;
}

/* One convert with one thread; msg gets the error message. */
static hc_status convert(const char *src, const char *out, unsigned tp, hc_fault *fault,
                         uint64_t limit, char *msg, size_t cap) {
    hc_converter *cv = hc_converter_create();
    hc_converter_set(cv, HC_CONV_THREADS, 1);
    hc_converter_set(cv, HC_CONV_TP_SIZE, tp);
    hc__converter_out_options(cv)->fault = fault;
    if (limit) CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_SIDE_FILE_LIMIT, (int64_t)limit), HC_OK);
    hc_status st = hc_converter_run(cv, src, out);
    snprintf(msg, cap, "%s", hc_converter_errmsg(cv));
    hc_converter_free(cv);
    return st;
}

#define DEMO_FILES "config.json,generation_config.json,model.hconvert,special_tokens_map.json," \
                   "tokenizer.json,tokenizer_config.json"

static void test_tmp_name_pattern(void) {
    static const char *const ours[] = {".model.hconvert.tmp-Ab12Cd", ".x.hconvert-tmp-000000",
                                       ".tokenizer.json.hconvert-tmp-zzZZ99"};
    static const char *const others[] = {
        "model.hconvert.tmp-Ab12Cd", ".model.hconvert.tmp-Ab12C", ".model.hconvert.tmp-Ab12Cd7",
        ".model.hconvert.tmp-Ab-2Cd", ".tokenizer.json.tmp-Ab12Cd", "..hconvert-tmp-Ab12Cd",
        ".hconvert-tmp-Ab12Cd", ".hconvert.lock", "", ".", "x.hconvert-tmp-Ab12Cd"};
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++)
        if (!hc__out_is_tmp_name(ours[i])) CHECK_FAIL_("'%s' should be ours", ours[i]);
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (hc__out_is_tmp_name(others[i])) CHECK_FAIL_("'%s' should not be ours", others[i]);
}

static void test_stale_tmp_removed(void) {
    char out[1024], r1[1100], msg[1024];
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    snprintf(r1, sizeof r1, "%s/rank1", out);
    CHECK(mkdir(out, 0755) == 0 && mkdir(r1, 0755) == 0);
    touch(out, ".model.hconvert.tmp-Ab12Cd");      /* ours, an earlier version's */
    touch(out, ".config.json.hconvert-tmp-Bb12Cd"); /* ours */
    touch(r1, ".model.hconvert.hconvert-tmp-Cc12Dd");
    touch(out, ".model.hconvert.tmp-Ab12C"); /* look-alikes: kept */
    touch(r1, "keep.tmp-Ab12Cd");
    snprintf(msg, sizeof msg, "%s/.d.hconvert-tmp-Dd12Ee", out); /* not a file: kept */
    CHECK(mkdir(msg, 0755) == 0);
    CHECK_EQ_INT(convert(fixture("quant/ct_moe_qwen3"), out, 2, NULL, 0, msg, sizeof msg), HC_OK);
    CHECK_STR_EQ(listing(out), ".d.hconvert-tmp-Dd12Ee,.hconvert.lock,.model.hconvert.tmp-Ab12C,"
                               "rank0,rank1");
    CHECK_STR_EQ(listing(r1), "config.json,expected.json,keep.tmp-Ab12Cd,model.hconvert");
}

/* Holds OUT's lock as another convert would (a separate open file description). */
static int hold_lock(const char *out) {
    char p[1100];
    snprintf(p, sizeof p, "%s/.hconvert.lock", out);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    return fd;
}

static void test_lock_refuses_second_convert(void) {
    char out[1024], msg[1024];
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    CHECK(mkdir(out, 0755) == 0);
    touch(out, ".model.hconvert.hconvert-tmp-Live12"); /* the holder's file: must stay */
    int fd = hold_lock(out);
    for (unsigned tp = 1; tp <= 2; tp++) {
        const char *src = fixture(tp == 1 ? "ckpt/demo" : "quant/ct_moe_qwen3");
        CHECK_EQ_INT(convert(src, out, tp, NULL, 0, msg, sizeof msg), HC_IO);
        CHECK_CONTAINS(msg, out);
        CHECK_CONTAINS(msg, "another convert holds");
        CHECK_STR_EQ(listing(out), ".hconvert.lock,.model.hconvert.hconvert-tmp-Live12");
    }
    close(fd);
    CHECK_EQ_INT(convert(fixture("ckpt/demo"), out, 1, NULL, 0, msg, sizeof msg), HC_OK);
    CHECK_STR_EQ(listing(out), ".hconvert.lock," DEMO_FILES);
}

/* A rank folder that is itself another convert's OUT (its lock held) is not cleaned: the
 * temporary file there is that convert's, still being written (found in review). */
static void test_live_rank_folder_kept(void) {
    char out[1024], r0[1100], msg[1024];
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    snprintf(r0, sizeof r0, "%s/rank0", out);
    CHECK(mkdir(out, 0755) == 0 && mkdir(r0, 0755) == 0);
    touch(r0, ".model.hconvert.hconvert-tmp-Live34");
    int fd = hold_lock(r0);
    CHECK_EQ_INT(convert(fixture("ckpt/demo"), out, 1, NULL, 0, msg, sizeof msg), HC_OK);
    CHECK_STR_EQ(listing(r0), ".hconvert.lock,.model.hconvert.hconvert-tmp-Live34");
    close(fd);
}

/* OUT holds one model: a convert with another --tp removes the containers the earlier run
 * wrote and this one does not replace (before: --tp 2 after --tp 4 left rank2 and rank3). */
static void test_other_ranks_removed(void) {
    char out[1024], msg[1024];
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    static const unsigned tps[] = {4, 2, 1, 3};
    static const char *const want[] = {"1111", "11--", "----", "111-"};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(convert(fixture("quant/ct_moe_qwen3"), out, tps[i], NULL, 0, msg, sizeof msg),
                     HC_OK);
        char got[8] = "", p[1200];
        struct stat sb;
        for (int r = 0; r < 4; r++) {
            snprintf(p, sizeof p, "%s/rank%d/model.hconvert", out, r);
            got[r] = stat(p, &sb) == 0 ? '1' : '-';
        }
        snprintf(p, sizeof p, "%s/model.hconvert", out);
        CHECK_STR_EQ(got, want[i]);
        CHECK((stat(p, &sb) == 0) == (tps[i] == 1));
    }
}

/* The fail_at-th write fails: no container from this run, no temporary file, no side file;
 * OUT holds want (with --tp: rank folders, each empty). */
static void fail_write(const char *src, const char *out, unsigned tp, uint64_t n,
                       const char *want) {
    char msg[1024];
    hc_fault f = {.fail_at = n};
    unsigned long long w = (unsigned long long)n;
    if (convert(src, out, tp, &f, 0, msg, sizeof msg) != HC_IO)
        CHECK_FAIL_("write %llu should fail: %s", w, msg);
    CHECK_CONTAINS(msg, "No space left on device");
    if (strncmp(listing(out), want, strlen(want)) || (tp == 1 && strcmp(listing(out), want)))
        CHECK_FAIL_("write %llu: left %s", w, listing(out));
    for (unsigned r = 0; r < tp && tp > 1; r++) {
        char rd[1100];
        snprintf(rd, sizeof rd, "%s/rank%u", out, r);
        if (listing(rd)[0]) CHECK_FAIL_("write %llu: rank %u left %s", w, r, listing(rd));
    }
}

static void test_enospc_at_each_write(void) {
    char out[1024], done[1024], msg[1024];
    const char *dir = test_tmpdir(), *src = fixture("ckpt/demo");
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(done, sizeof done, "%s/done", dir);
    hc_fault count = {0};
    CHECK_EQ_INT(convert(src, done, 1, &count, 0, msg, sizeof msg), HC_OK);
    uint64_t k = count.writes, tensors = 0;
    char path[1100], why[256];
    snprintf(path, sizeof path, "%s/model.hconvert", done);
    hc_container *ct = NULL;
    if (hc_container_open(path, 0, &ct, why, sizeof why) == HC_OK)
        tensors = hc_container_tensor_count(ct);
    hc_container_free(ct);
    /* one write per (small) side file and per tensor, then the header and the preamble */
    CHECK_EQ_U64(k, side_files(src) + tensors + 2);
    /* every side file's write, the first container writes, the header and the preamble */
    uint64_t head = side_files(src) + 3;
    for (uint64_t n = 1; k > head + 3 && n <= k; n = n == head ? k - 2 : n + 1)
        fail_write(src, out, 1, n, ".hconvert.lock");
    /* over a complete earlier output: it stays as it was (same files, same inodes) */
    ino_t c0 = inode(done, "model.hconvert"), t0 = inode(done, "tokenizer.json");
    for (uint64_t n = 1; n <= k; n += k - 1) fail_write(src, done, 1, n, ".hconvert.lock," DEMO_FILES);
    CHECK(c0 && c0 == inode(done, "model.hconvert") && t0 == inode(done, "tokenizer.json"));
}

/* With --tp the ranks are one step: a failure in rank 1 leaves rank 0 without a container. */
static void test_enospc_tp_all_or_nothing(void) {
    char out[1024], msg[1024];
    const char *src = fixture("quant/ct_moe_qwen3");
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    hc_fault count = {0};
    CHECK_EQ_INT(convert(src, out, 2, &count, 0, msg, sizeof msg), HC_OK);
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    fail_write(src, out, 2, count.writes, ".hconvert.lock,rank0,rank1"); /* rank 1's preamble */
    fail_write(src, out, 2, 1, ".hconvert.lock,rank0");
}

static void fill_file(const char *path, uint64_t size, const uint64_t *offs, const char *const *txt,
                      size_t n) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
    for (size_t i = 0; i < n; i++)
        CHECK(pwrite(fd, txt[i], strlen(txt[i]), (off_t)offs[i]) == (ssize_t)strlen(txt[i]));
    close(fd);
}

static hc_status copy_expect(const char *src, const char *dst, uint64_t limit,
                             const hc_file_id *expect, char *msg, size_t cap) {
    hc_err err = {0};
    hc_atomic_file af;
    hc_status st = hc__out_open(&af, dst, NULL, &err);
    if (!st) {
        st = hc__atomic_copy(&af, src, limit, expect, &err);
        if (st) hc__atomic_abort(&af);
        else st = hc__atomic_commit(&af, &err);
    }
    snprintf(msg, cap, "%s", err.msg);
    return st;
}

static hc_status copy(const char *src, const char *dst, uint64_t limit, char *msg, size_t cap) {
    return copy_expect(src, dst, limit, NULL, msg, cap);
}

/* A side file swapped after the checkpoint was checked (for a link to a file outside it, or
 * for another file) is not copied: the copy opens what the check saw or nothing. */
static void test_copy_refuses_swapped_side_file(void) {
    char ck[1024], src[1100], dst[1100], outside[1100], msg[1024];
    snprintf(ck, sizeof ck, "%s/ck", test_tmpdir());
    snprintf(msg, sizeof msg, "cp -r '%s' '%s'", fixture("ckpt/demo"), ck);
    CHECK_EQ_INT(system(msg), 0);
    snprintf(outside, sizeof outside, "%s/../secret.txt", ck);
    touch(ck, "../secret.txt");
    hc_ckpt *c = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__ckpt_open(ck, &c, &err), HC_OK);
    size_t k = 0;
    while (c && k < c->nextra && strcmp(c->extra_files[k], "tokenizer.json")) k++;
    if (!c || k == c->nextra || !c->extra_ids) {
        CHECK_FAIL_("%s", "tokenizer.json is not a side file of the demo");
        hc__ckpt_close(c);
        return;
    }
    snprintf(src, sizeof src, "%s/tokenizer.json", ck);
    snprintf(dst, sizeof dst, "%s/../copied.json", ck);
    CHECK_EQ_INT(copy_expect(src, dst, 1u << 30, &c->extra_ids[k], msg, sizeof msg), HC_OK);
    for (int swap = 0; swap < 2; swap++) {
        if (swap == 0) { /* a link out of the checkpoint (the checked file kept aside, so no
                          * new file can reuse its inode number) */
            char aside[1200];
            snprintf(aside, sizeof aside, "%s/aside.json", ck);
            CHECK(rename(src, aside) == 0);
            CHECK(symlink(outside, src) == 0);
        } else { /* another file renamed over it */
            char other[1200];
            snprintf(other, sizeof other, "%s/other.json", ck);
            touch(ck, "other.json");
            CHECK(rename(other, src) == 0);
        }
        CHECK_EQ_INT(copy_expect(src, dst, 1u << 30, &c->extra_ids[k], msg, sizeof msg),
                     HC_INVALID);
        CHECK_CONTAINS(msg, "changed after the checkpoint was checked");
    }
    hc__ckpt_close(c);
}

static void test_sparse_copy_stays_sparse(void) {
    char src[1024], dst[1024], msg[1024], b[8];
    const char *dir = test_tmpdir();
    const uint64_t size = 1ull << 30, offs[] = {0, 1ull << 29, (1ull << 30) - 4};
    const char *const txt[] = {"head", "middle", "tail"};
    snprintf(src, sizeof src, "%s/tokenizer.json", dir);
    snprintf(dst, sizeof dst, "%s/copy.json", dir);
    fill_file(src, size, offs, txt, 3);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ_INT(copy(src, dst, HC_SIDE_FILE_LIMIT_DEFAULT, msg, sizeof msg), HC_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (s > 5) CHECK_FAIL_("a 1 GiB sparse copy took %.1f s", s);
    struct stat sb;
    CHECK(stat(dst, &sb) == 0);
    CHECK_EQ_U64(sb.st_size, size);
    if ((uint64_t)sb.st_blocks * 512 > (1u << 20))
        CHECK_FAIL_("the copy uses %llu bytes of disk", (unsigned long long)sb.st_blocks * 512);
    int fd = open(dst, O_RDONLY);
    for (size_t i = 0; i < 3; i++) {
        memset(b, 0, sizeof b);
        CHECK(pread(fd, b, strlen(txt[i]), (off_t)offs[i]) == (ssize_t)strlen(txt[i]));
        CHECK_STR_EQ(b, txt[i]);
    }
    const uint64_t zeros[] = {4, 4096, 1ull << 28, (1ull << 29) + 6, (1ull << 30) - 5};
    for (size_t i = 0; i < sizeof zeros / sizeof *zeros; i++) {
        b[0] = 1;
        CHECK(pread(fd, b, 1, (off_t)zeros[i]) == 1 && b[0] == 0);
    }
    close(fd);
    unlink(src);
    unlink(dst);
}

/* Data, an all-zero stretch that spans whole copy blocks, data, trailing zeros: equal bytes. */
static void test_copy_skips_zero_blocks_exactly(void) {
    char src[1024], dst[1024], msg[1024];
    const char *dir = test_tmpdir();
    const size_t n = 300001;
    unsigned char *a = calloc(n, 1), *b = malloc(n);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (i < 70000 || (i >= 200000 && i < 290000)) a[i] = (unsigned char)(x | 1);
    }
    snprintf(src, sizeof src, "%s/vocab.json", dir);
    snprintf(dst, sizeof dst, "%s/out.json", dir);
    FILE *f = fopen(src, "wb");
    CHECK(f && fwrite(a, 1, n, f) == n);
    if (f) fclose(f);
    CHECK_EQ_INT(copy(src, dst, HC_SIDE_FILE_LIMIT_DEFAULT, msg, sizeof msg), HC_OK);
    f = fopen(dst, "rb");
    CHECK(f && fread(b, 1, n, f) == n && fgetc(f) == EOF);
    if (f) fclose(f);
    CHECK(memcmp(a, b, n) == 0);
    free(a);
    free(b);
}

static int copy_fifo_child(const char *fifo, const char *dst) {
    char msg[1024];
    hc_status st = copy(fifo, dst, HC_SIDE_FILE_LIMIT_DEFAULT, msg, sizeof msg);
    return st == HC_INVALID && strstr(msg, "FIFO") && strstr(msg, fifo) ? 0 : 1;
}

/* A FIFO among the side files is refused at once (in a child, so that a regression hangs
 * the child, not the suite). */
static void test_copy_refuses_fifo(void) {
    char fifo[1024], dst[1024];
    const char *dir = test_tmpdir();
    snprintf(fifo, sizeof fifo, "%s/tokenizer.json", dir);
    snprintf(dst, sizeof dst, "%s/copy.json", dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(copy_fifo_child(fifo, dst));
    int status = -1, waited = 0;
    while (waitpid(pid, &status, WNOHANG) == 0 && waited++ < 300) usleep(10000);
    if (waited > 300) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        CHECK_FAIL_("copying the FIFO '%s' blocked", fifo);
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK_STR_EQ(listing(dir), "tokenizer.json");
}

static void test_side_file_limit(void) {
    char msg[1024], dst[1024], out[1024], src[1024], want[256];
    const char *dir = test_tmpdir(), *demo = fixture("ckpt/demo");
    uint64_t n = file_size(demo, "tokenizer.json"), c = file_size(demo, "config.json");
    snprintf(src, sizeof src, "%s/tokenizer.json", demo);
    snprintf(dst, sizeof dst, "%s/t.json", dir);
    CHECK(n > 1 && c > 1);
    CHECK_EQ_INT(copy(src, dst, n - 1, msg, sizeof msg), HC_INVALID);
    CHECK_CONTAINS(msg, src);
    snprintf(want, sizeof want, "%llu bytes, more than the %llu allowed", (unsigned long long)n,
             (unsigned long long)n - 1);
    CHECK_CONTAINS(msg, want);
    CHECK_EQ_INT(copy(src, dst, n, msg, sizeof msg), HC_OK);
    /* through the converter's options: config.json, the first side file, is refused */
    snprintf(out, sizeof out, "%s/out", dir);
    CHECK_EQ_INT(convert(demo, out, 1, NULL, 1, msg, sizeof msg), HC_INVALID);
    snprintf(want, sizeof want, "config.json' is %llu bytes, more than the 1 allowed",
             (unsigned long long)c);
    CHECK_CONTAINS(msg, want);
    CHECK_STR_EQ(listing(out), ".hconvert.lock");
    hc_converter *cv = hc_converter_create();
    CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_SIDE_FILE_LIMIT, 0), HC_USAGE);
    hc_converter_free(cv);
}

void suite_faults(void) {
    RUN(test_tmp_name_pattern);
    RUN(test_stale_tmp_removed);
    RUN(test_lock_refuses_second_convert);
    RUN(test_enospc_at_each_write);
    RUN(test_enospc_tp_all_or_nothing);
    RUN(test_sparse_copy_stays_sparse);
    RUN(test_copy_skips_zero_blocks_exactly);
    RUN(test_copy_refuses_fifo);
    RUN(test_side_file_limit);
    RUN(test_live_rank_folder_kept);
    RUN(test_copy_refuses_swapped_side_file);
    RUN(test_other_ranks_removed);
}
