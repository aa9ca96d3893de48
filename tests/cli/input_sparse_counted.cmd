# a sparse 64 MiB tokenizer.json counts at its logical size against the cap
cp -r "$FIX/ckpt/single" ck
truncate -s 64M ck/tokenizer.json
tar -S -cf sparse.tar ck
$HC inspect sparse.tar
