# tar -czf of "." and python's zipfile (folder entries) read like the folder
tar -czf ck.tar.gz -C "$FIX/ckpt/sharded" .
(cd "$FIX/ckpt" && python3 -m zipfile -c "$T/ck.zip" sharded/)
$HC inspect ck.tar.gz
$HC inspect ck.zip
