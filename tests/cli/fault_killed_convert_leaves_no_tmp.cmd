# a convert killed while writing (RLIMIT_FSIZE: SIGXFSZ at the container's ftruncate, a
# death no handler sees, like kill -9, at a point that does not depend on timing) leaves
# its temporary files; the next run removes them and leaves a complete folder
rc=0
(ulimit -c 0; ulimit -f 64; exec "$HC" convert "$FIX/ckpt/demo" out) >/dev/null 2>&1 || rc=$?
echo "killed: $((rc > 128))"
echo "temporary files left: $(($(ls -A out | grep -c 'tmp-') > 0))"
$HC convert $FIX/ckpt/demo out >/dev/null 2>&1
$HC verify out >/dev/null
LC_ALL=C ls -A out
