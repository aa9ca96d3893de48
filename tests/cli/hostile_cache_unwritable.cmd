# --target sm90 with a kernel cache that cannot be written (its folder would lie below a
# regular file, as a read-only or full disk would refuse it too): the container is written and
# convert succeeds, but it says the kernels could not be stored instead of "in the kernel cache"
printf x > file
HC_CACHE_DIR=$T/file/kc $HC convert $FIX/quant/gptq_desc_act out --target sm90 2>err >/dev/null
cat err >&2
if grep -q 'in the kernel cache' err; then exit 1; fi
ls out/model.hconvert
