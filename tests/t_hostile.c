/* t_hostile.c: hostile containers, .npy headers, safetensors headers and kernel-cache entries. */
#include "test.h"

void suite_hostile(void) {
}
