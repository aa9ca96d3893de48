# a link that leaves the checkpoint folder is refused, and nothing from outside reaches OUT
cp -r "$FIX/ckpt/single" ck
echo '{"secret": 1}' > outside.json
ln -s "$T/outside.json" ck/notes.json
rc=0
$HC convert ck out >/dev/null || rc=$?
test ! -e out/notes.json || exit 9
exit $rc
