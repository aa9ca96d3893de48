/* consumer.c: a runtime user's program, built against an installed hconvert through
 * pkg-config (hcrt alone), to prove the install is usable. Prints the tensor count. */
#include <hcrt.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    hc_container *c = NULL;
    char msg[1024];
    hc_status st = hc_container_open(argv[1], 1, &c, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "%s: %s\n", hc_status_name(st), msg);
        return 1;
    }
    printf("%zu tensors\n", hc_container_tensor_count(c));
    hc_container_free(c);
    return 0;
}
