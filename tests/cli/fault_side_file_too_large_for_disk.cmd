# a real write failure while copying a side file (RLIMIT_FSIZE with SIGXFSZ ignored: EFBIG
# past 768 KiB; the container, 492 KiB, fits): no model.hconvert and no temporary file
cp -r "$FIX/ckpt/demo" src
head -c 1048576 /dev/zero | tr '\0' 'a' >src/tokenizer.json
rc=0
(trap '' XFSZ; ulimit -f 1536; exec "$HC" convert src out) >/dev/null 2>err || rc=$?
cat err >&2
echo "exit $rc"
LC_ALL=C ls -A out
